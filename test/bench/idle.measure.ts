import { startPrivateCluster } from '../support/postgres.cluster.js'
import { BENCH_SERVICE } from './ingest.pool.js'
import { postgresCpuMs, treeCpuMs } from './process.cpu.js'
import { startServe } from './serve.process.js'

/**
 * `tsx test/bench/idle.measure.ts`: what an idle `livegate serve` (one worker, the bench's
 * settings, no request at all) costs its PostgreSQL server and itself per second: the background
 * loops (the projector's and the enqueuer's passes, leases, pollers, the listener) that every
 * bench window counts in "PostgreSQL CPU per request" beside the requests' own statements. A
 * private cluster, an empty database, IDLE_SETTLE_MS (10 s) after the start, then IDLE_WINDOWS
 * (3) windows of IDLE_WINDOW_MS (10 s).
 */
const SETTLE_MS = Number(process.env.IDLE_SETTLE_MS ?? 10_000)
const WINDOWS = Number(process.env.IDLE_WINDOWS ?? 3)
const WINDOW_MS = Number(process.env.IDLE_WINDOW_MS ?? 10_000)

const cluster = await startPrivateCluster()
const port = new URL(cluster.url).port
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
try {
  const serve = await startServe(cluster.url, BENCH_SERVICE)
  try {
    await sleep(SETTLE_MS)
    for (let window = 1; window <= WINDOWS; window++) {
      const [pg, node, at] = [postgresCpuMs(port), treeCpuMs(serve.pid), performance.now()]
      await sleep(WINDOW_MS)
      const seconds = (performance.now() - at) / 1000
      const pgPerSecond = (postgresCpuMs(port) - pg) / seconds
      const nodePerSecond = (treeCpuMs(serve.pid) - node) / seconds
      console.log(
        `window ${window}: PostgreSQL ${pgPerSecond.toFixed(1)} ms of CPU per second, ` +
          `livegate ${nodePerSecond.toFixed(1)} ms per second, idle`,
      )
    }
  } finally {
    await serve.stop()
  }
} finally {
  await cluster.destroy()
}
