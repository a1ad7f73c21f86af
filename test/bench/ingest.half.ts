import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks'
import { type BenchContext, ms } from './bench.report.js'
import { lagBetween, lagQuantileMs, lagShareWithin, scrapeLag, settleByMetrics } from './ingest.lag.js'
import { signPool } from './ingest.pool.js'
import { runLoad } from './load.generate.js'

/** The ingest rounds' shape, shared with the window here. */
export const CONNECTIONS = 100
export const WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? 500)
export const LAG_TARGET_SECONDS = 0.1
const HALF_RATE_MS = Number(process.env.BENCH_HALF_RATE_MS ?? 5000)

/** The gateway under test: where it listens, and its rows once every acknowledged one is stored. */
export interface HalfRateTarget {
  url: string
  countRows(): Promise<number>
}

/** Counts rows until `expected` are there (a spooled callback lands later), or gives up and counts. */
type Settled = (count: () => Promise<number>, expected: number) => Promise<number>

/** What one paced window measured. */
export interface HalfRate {
  /** The rate asked for, and what was sent. */
  rate: number
  sent: number
  lag: { p50Ms: number; p99Ms: number; withinTarget: number; folded: number; catchUpMs: number }
  ackP99Ms: number
  lost: number
  /**
   * The gateway's event loop over the window (it runs in this process): its delay's p99 and
   * maximum, and the longest garbage collection and the collections' total, so a stall of the
   * whole process is told apart from a projector that was merely late.
   */
  loop: { p99Ms: number; maxMs: number; gcMaxMs: number; gcTotalMs: number; gcCount: number }
}

/**
 * livegate on PostgreSQL at a paced rate (half the maximum it just sustained) for one window: the
 * projection lag from its own histogram, as in the rounds, and how long the acknowledgement took.
 */
export async function lagAtRate(ctx: BenchContext, target: HalfRateTarget, rate: number, settled: Settled) {
  const before = await scrapeLag(target.url)
  const rowsBefore = await target.countRows()
  const pool = signPool(target.url, Math.ceil((rate * (HALF_RATE_MS + WARMUP_MS)) / 1000) + 100, 'half')
  const delay = monitorEventLoopDelay({ resolution: 5 })
  const gc = { maxMs: 0, totalMs: 0, count: 0 }
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      gc.maxMs = Math.max(gc.maxMs, entry.duration)
      gc.totalMs += entry.duration
      gc.count++
    }
  })
  observer.observe({ entryTypes: ['gc'] })
  delay.enable()
  const result = await runLoad({
    url: target.url,
    connections: CONNECTIONS,
    warmupMs: WARMUP_MS,
    durationMs: HALF_RATE_MS,
    pool,
    ratePerSecond: rate,
  })
  delay.disable()
  observer.disconnect()
  const catchUpMs = await settleByMetrics([target.url])
  const lag = lagBetween(before, await scrapeLag(target.url))
  const rows = (await settled(target.countRows, rowsBefore + result.okTotal)) - rowsBefore
  const loop = {
    p99Ms: delay.percentile(99) / 1e6,
    maxMs: delay.max / 1e6,
    gcMaxMs: gc.maxMs,
    gcTotalMs: gc.totalMs,
    gcCount: gc.count,
  }
  ctx.log(
    `ingest: at ${rate.toFixed(0)} callbacks/s (half the maximum): ${result.rps.toFixed(0)} answered/s, ` +
      `lag p99 ${ms(lagQuantileMs(lag, 0.99))} ms, loop delay p99 ${ms(loop.p99Ms)} max ${ms(loop.maxMs)} ms, ` +
      `longest GC ${ms(loop.gcMaxMs)} ms`,
  )
  const half: HalfRate = {
    rate,
    sent: result.rps,
    lag: {
      p50Ms: lagQuantileMs(lag, 0.5),
      p99Ms: lagQuantileMs(lag, 0.99),
      withinTarget: lagShareWithin(lag, LAG_TARGET_SECONDS),
      folded: lag.count,
      catchUpMs,
    },
    ackP99Ms: result.p99Ms,
    lost: Math.max(0, result.okTotal - rows),
    loop,
  }
  return half
}

export function halfRateNote(half: HalfRate): string {
  return (
    `At half the maximum rate (${half.rate.toFixed(0)} callbacks/s asked, paced: each request sent at its due ` +
    `time over the same ${CONNECTIONS} connections, ${HALF_RATE_MS / 1000} s measured), the projection lag was ` +
    `p50 ${ms(half.lag.p50Ms)} ms and p99 ${ms(half.lag.p99Ms)} ms over ${half.lag.folded} folded callbacks ` +
    `(${(100 * half.lag.withinTarget).toFixed(2)}% within 100 ms), ` +
    `the acknowledgement's p99 ${ms(half.ackP99Ms)} ms. ` +
    `The gateway's event loop meanwhile: delay p99 ${ms(half.loop.p99Ms)} ms, longest ${ms(half.loop.maxMs)} ms; ` +
    `${half.loop.gcCount} garbage collections, ${ms(half.loop.gcTotalMs)} ms in all, the longest ` +
    `${ms(half.loop.gcMaxMs)} ms. At the maximum rate (the rounds above) the lag is bounded by the CPU left ` +
    "over: the load, the acknowledgements and the fold share the same cores, so the fold's batches wait their turn."
  )
}
