import { availableParallelism } from 'node:os'
import { type BenchContext, ms, quantile } from './bench.report.js'
import type { BenchReceiver } from './delivery.receiver.js'
import { type Rig, settleDeliveries, startServeRig } from './delivery.rig.js'
import { settleByMetrics } from './ingest.lag.js'
import { signPool } from './ingest.pool.js'
import { runLoad } from './load.generate.js'

// The ingest windows are the ingest part's (same variables, same load generator and signed pool).
export const CONNECTIONS = 100
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4)
export const WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? 500)
export const WINDOW_MS = Number(process.env.BENCH_WINDOW_MS ?? 2500)
const ROUND_POOL = Number(process.env.BENCH_POOL_SIZE ?? 60_000)
export const LAG_MS = Number(process.env.BENCH_DELIVERY_LAG_MS ?? 10_000)
// `serve --workers` at its default on a server: one per core.
export const WORKERS = Number(process.env.BENCH_DELIVERY_WORKERS ?? availableParallelism())

/** The delivery lag at a paced rate. */
export interface Lag {
  rate: number
  sent: number
  p50Ms: number
  p99Ms: number
  samples: number
}

/** Ingest and lag with `serve --workers N` processes, one way of delivering. */
export interface WorkerFigures {
  /** How it was run, as the tables name it. */
  setup: string
  ingest: { none: number; three: number }
  lag: Lag
}

/** Ingest in interleaved rounds, with no endpoint and with three; each window's deliveries settled before the next. */
export async function ingestRounds(
  ctx: BenchContext,
  none: Rig,
  three: Rig,
  receivers: BenchReceiver[],
): Promise<{ none: number; three: number }> {
  const measured = { none: 0, three: 0 }
  for (let round = 0; round < ROUNDS; round++) {
    // Turns alternate, so neither gateway is always the one that runs first (and warms the machine up).
    const turns = [['none', none] as const, ['three', three] as const]
    const rates = { none: 0, three: 0 }
    for (const [name, rig] of round % 2 === 0 ? turns : turns.reverse()) {
      const pool = signPool(rig.url, ROUND_POOL, `delivery-${rig.kind}-${name}-${round}`)
      const result = await runLoad({
        url: rig.url,
        connections: CONNECTIONS,
        warmupMs: WARMUP_MS,
        durationMs: WINDOW_MS,
        pool,
      })
      measured[name] += result.measured
      rates[name] = result.rps
      await settleByMetrics([rig.url])
      if (name === 'three') await settleDeliveries(rig, receivers)
    }
    ctx.log(
      `delivery (${none.kind}): ingest round ${round + 1}/${ROUNDS}: ${rates.none.toFixed(0)} req/s with none, ${rates.three.toFixed(0)}` +
        ` with three`,
    )
  }
  const seconds = (ROUNDS * WINDOW_MS) / 1000
  return { none: measured.none / seconds, three: measured.three / seconds }
}

/** The lag from a callback's arrival to its delivery, at a paced rate, over the three receivers. */
export async function lagAtRate(ctx: BenchContext, rig: Rig, receivers: BenchReceiver[], rate: number): Promise<Lag> {
  await Promise.all(receivers.map((receiver) => receiver.reset()))
  const pool = signPool(rig.url, Math.ceil((rate * (LAG_MS + WARMUP_MS)) / 1000) + 100, `delivery-lag-${rig.kind}`)
  const result = await runLoad({
    url: rig.url,
    connections: CONNECTIONS,
    warmupMs: WARMUP_MS,
    durationMs: LAG_MS,
    pool,
    ratePerSecond: rate,
  })
  await settleDeliveries(rig, receivers)
  const stats = await Promise.all(receivers.map((receiver) => receiver.stats()))
  const lags = Float64Array.from(stats.flatMap((byPath) => Object.values(byPath).flatMap((s) => s.lagsMs))).sort()
  ctx.log(
    `delivery (${rig.kind}): at ${rate.toFixed(0)} callbacks/s: delivery lag p99 ${ms(quantile(lags, 0.99))} ms ` +
      `over ${lags.length} deliveries`,
  )
  return { rate, sent: result.rps, p50Ms: quantile(lags, 0.5), p99Ms: quantile(lags, 0.99), samples: lags.length }
}

/**
 * Ingest with three endpoints and with none, and the lag at half the first's rate, with
 * `serve --workers N` processes as an operator runs them: the endpoints' deliveries made by a
 * webhook worker of its own (`ownWorker`), or by every HTTP worker.
 */
export async function withWorkers(
  ctx: BenchContext,
  three: BenchReceiver[],
  rigs: Rig[],
  ownWorker: boolean,
): Promise<WorkerFigures> {
  const setup = `serve --workers ${WORKERS}, ${ownWorker ? 'a webhook worker of its own' : 'every worker delivering'}`
  const none = await startServeRig(ctx, WORKERS, [])
  rigs.push(none)
  const endpoints = three.map((receiver, i) => ({ name: `e${i + 1}`, receiver }))
  const fanned = await startServeRig(ctx, WORKERS, endpoints, { ownWorker })
  rigs.push(fanned)
  ctx.log(`delivery (PostgreSQL): ${setup}`)
  const ingest = await ingestRounds(ctx, none, fanned, three)
  const lag = await lagAtRate(ctx, fanned, three, ingest.three / 2)
  return { setup, ingest, lag }
}
