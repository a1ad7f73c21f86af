import { WEBHOOK_SECRET } from '../support/receiver.process.js'
import type { BenchContext } from './bench.report.js'
import { startBareLoop } from './delivery.bare.js'
import type { BenchReceiver } from './delivery.receiver.js'
import { type Rig, waitFor } from './delivery.rig.js'
import { signPool } from './ingest.pool.js'
import { runLoad } from './load.generate.js'
import { mainThreadCpuMs } from './process.cpu.js'

/** Deliveries per second and Node CPU per delivery of livegate and of the bare loop, rounds pooled. */
export interface Throughput {
  events: number
  livegate: { perSecond: number; cpuUsPerDelivery: number }
  bare: { perSecond: number; cpuUsPerDelivery: number }
}

/**
 * Delivery throughput to one fast receiver. Each round, livegate's receiver holds its answers
 * while `events` callbacks are ingested and put in line, so none is delivered before the clock
 * starts; then it answers, and the time runs until nothing is left in line (every outcome
 * stored). The bare loop is handed the very bodies livegate put in line, on a database of the
 * same kind, and timed from its first read to its last mark. The two take turns, first one then
 * the other, so a neighbour's load falls on both.
 */
export async function measureThroughput(
  ctx: BenchContext,
  rig: Rig,
  receiver: BenchReceiver,
  events: number,
  rounds: number,
): Promise<Throughput> {
  const bareDb = rig.kind === 'PostgreSQL' ? await ctx.createDatabase() : undefined
  const bare = await startBareLoop(bareDb?.url)
  const totals = { livegate: { n: 0, ms: 0, cpuMs: 0 }, bare: { n: 0, ms: 0, cpuMs: 0 } }
  try {
    for (let round = 0; round < rounds; round++) {
      await receiver.reset()
      await receiver.hold()
      const load = await runLoad({
        url: rig.url,
        connections: 32,
        warmupMs: 0,
        durationMs: 600_000,
        pool: signPool(rig.url, events, `throughput-${rig.kind}-${round}`),
      })
      await waitFor('putting the callbacks in line', async () => (await rig.waiting()).pending >= load.okTotal, 120_000)
      const cpuBefore = mainThreadCpuMs()
      const releasedAt = await receiver.release()
      // The receiver is asked first (another process): a count every 10 ms would take turns with
      // the deliveries on PGlite's one connection. Then the outcomes stored, which end the time.
      const path = `/hooks/${rig.endpoints[0]}`
      await waitFor(
        'delivering the held line',
        async () => ((await receiver.counts())[path] ?? 0) >= load.okTotal,
        600_000,
        10,
      )
      await waitFor('storing the outcomes', async () => (await rig.waiting()).pending === 0, 600_000, 10)
      const livegateMs = Date.now() - releasedAt
      totals.livegate.cpuMs += mainThreadCpuMs() - cpuBefore
      totals.livegate.n += load.okTotal
      totals.livegate.ms += livegateMs

      const bodies = await rig.bodies(rig.endpoints[0] as string, load.okTotal)
      await bare.fill(bodies.reverse().map((row) => ({ eventId: `${row.eventId}-bare-${round}`, body: row.body })))
      const bareCpu = mainThreadCpuMs()
      const bareStart = Date.now()
      const delivered = await bare.drain(`${receiver.url}/hooks/bare`, WEBHOOK_SECRET)
      const bareMs = Date.now() - bareStart
      totals.bare.cpuMs += mainThreadCpuMs() - bareCpu
      totals.bare.n += delivered
      totals.bare.ms += bareMs
      ctx.log(
        `delivery (${rig.kind}): round ${round + 1}/${rounds}: livegate ${((load.okTotal * 1000) / livegateMs).toFixed(0)}` +
          `/s, bare loop ${((delivered * 1000) / bareMs).toFixed(0)}/s`,
      )
    }
  } finally {
    await bare.close()
    await bareDb?.drop()
  }
  const figure = (t: { n: number; ms: number; cpuMs: number }) => ({
    perSecond: (t.n * 1000) / t.ms,
    cpuUsPerDelivery: (t.cpuMs * 1000) / t.n,
  })
  return { events, livegate: figure(totals.livegate), bare: figure(totals.bare) }
}
