/**
 * The projection lag at a paced rate, alone, with the event loop's delay beside it: the probe
 * behind issue 36's Node 24 stall. `npx tsx test/bench/ingest.stall.ts [rate] [seconds]` against
 * BENCH_DATABASE_URL; add `--cpu-prof` or `--trace-gc` (node --import tsx) to see what the loop did.
 */
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import postgres from 'postgres'
import { startBenchGateway } from './bench.gateway.js'
import { lagBetween, lagQuantileMs, scrapeLag, settleByMetrics } from './ingest.lag.js'
import { BENCH_SERVICE, signPool } from './ingest.pool.js'
import { runLoad } from './load.generate.js'
import { startPrivateCluster } from '../support/postgres.cluster.js'
import { GraphProjector } from '../../src/work/graph/graph.projector.js'

// STALL_PASSES=1: every projector pass with its start, length and what it folded (to stderr).
if (process.env.STALL_PASSES) {
  const proto = GraphProjector.prototype as unknown as { fold: () => Promise<unknown> }
  const fold = proto.fold
  const t0 = performance.now()
  proto.fold = async function (this: unknown) {
    const start = performance.now()
    const pass = (await fold.call(this)) as { folded?: number; pending?: boolean }
    const end = performance.now()
    const took = `+${(end - start).toFixed(0)} ms`
    process.stderr.write(`pass ${(start - t0).toFixed(0)} ${took} folded ${pass.folded} pending ${pass.pending}\n`)
    return pass
  }
}

// STALL_PRIVATE=1: a PostgreSQL cluster of its own, whose oldest running transaction is only ours
// (on a shared server any database's transactions hold the log's readers back).
const cluster = process.env.STALL_PRIVATE ? await startPrivateCluster() : undefined
const serverUrl = cluster?.url ?? process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:55432/postgres'
const rate = Number(process.argv[2] ?? 2200)
const seconds = Number(process.argv[3] ?? 5)
const rounds = Number(process.env.STALL_ROUNDS ?? 3)

const name = `livegate_stall_${randomBytes(4).toString('hex')}`
const admin = postgres(serverUrl, { max: 1, onnotice: () => {} })
await admin.unsafe(`create database ${name}`)
const url = new URL(serverUrl)
url.pathname = `/${name}`
const bench = await startBenchGateway({ databaseUrl: url.toString(), service: BENCH_SERVICE })
try {
  // The bench's rounds at full speed come first in `npm run bench`; a warm gateway is what it measures.
  const warm = signPool(bench.gateway.url, 30_000, 'warm')
  await runLoad({ url: bench.gateway.url, connections: 100, warmupMs: 500, durationMs: 2500, pool: warm })
  await settleByMetrics([bench.gateway.url])
  for (let round = 0; round < rounds; round++) {
    const before = await scrapeLag(bench.gateway.url)
    const pool = signPool(bench.gateway.url, Math.ceil(rate * (seconds + 0.5)) + 100, `r${round}`)
    // STALL_PROFILE=<file>: a V8 CPU profile of this process over the last round's window only.
    const profiling = process.env.STALL_PROFILE && round === rounds - 1 ? new Session() : undefined
    if (profiling) {
      profiling.connect()
      await profiling.post('Profiler.enable')
      await profiling.post('Profiler.start')
    }
    const delay = monitorEventLoopDelay({ resolution: 5 })
    delay.enable()
    const load = { url: bench.gateway.url, connections: 100, warmupMs: 500, durationMs: seconds * 1000 }
    const result = await runLoad({ ...load, pool, ratePerSecond: rate })
    delay.disable()
    if (profiling) {
      const { profile } = await profiling.post('Profiler.stop')
      writeFileSync(process.env.STALL_PROFILE as string, JSON.stringify(profile))
      profiling.disconnect()
    }
    await settleByMetrics([bench.gateway.url])
    const lag = lagBetween(before, await scrapeLag(bench.gateway.url))
    const q = (p: number) => (delay.percentile(p) / 1e6).toFixed(1)
    console.log(
      `${process.version} round ${round}: ${result.rps.toFixed(0)}/s ack p99 ${result.p99Ms.toFixed(1)} ms; ` +
        `lag p50 ${lagQuantileMs(lag, 0.5).toFixed(1)} p99 ${lagQuantileMs(lag, 0.99).toFixed(1)} ms; ` +
        `loop delay p50 ${q(50)} p99 ${q(99)} max ${(delay.max / 1e6).toFixed(1)} ms`,
    )
  }
} finally {
  await bench.close()
  await admin.unsafe(`drop database if exists ${name} with (force)`)
  await admin.end()
  await cluster?.destroy()
}
