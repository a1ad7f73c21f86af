import type { BenchContext } from './bench.report.js'
import type { BenchReceiver } from './delivery.receiver.js'
import { type Rig, waitFor } from './delivery.rig.js'
import { signPool } from './ingest.pool.js'
import { runLoad } from './load.generate.js'

/** What a receiver outage left behind once the receiver came back. */
export interface Outage {
  outageMs: number
  /** Callbacks acknowledged while it was down: each one delivery. */
  events: number
  /** Distinct deliveries the receiver took in, and how long after its return the last came. */
  delivered: number
  afterReturnMs: number
  /** Requests of an id the receiver had already taken in. */
  duplicates: number
  /** Attempts the receiver read but whose answer never left: the ones a sender must repeat. */
  lostAnswers: number
  /** Attempts livegate counted as failed (retried later), and dead letters left. */
  failedAttempts: number
  dead: number
}

/**
 * The receiver is taken down (it stops listening and cuts its connections), `events` callbacks are
 * ingested and put in line while it is down, and it comes back `outageMs` after it went: then
 * everything must arrive. A duplicate is only allowed where an answer was lost, so the receiver
 * counts both; on the rig the retry schedule's steps are a sixth of the outage (see the part).
 */
export async function measureOutage(
  ctx: BenchContext,
  rig: Rig,
  receiver: BenchReceiver,
  events: number,
  outageMs: number,
): Promise<Outage> {
  await receiver.reset()
  const failedBefore = await rig.attempts('retry')
  const downAt = Date.now()
  await receiver.down()
  const load = await runLoad({
    url: rig.url,
    connections: 32,
    warmupMs: 0,
    durationMs: 600_000,
    pool: signPool(rig.url, events, `outage-${rig.kind}`),
  })
  await waitFor('putting the callbacks in line', async () => (await rig.waiting()).pending >= load.okTotal, 120_000)
  const left = downAt + outageMs - Date.now()
  if (left < 0)
    ctx.log(`delivery (${rig.kind}): ingesting ${events} callbacks outlasted the ${outageMs} ms outage by ${-left} ms`)
  else await new Promise((resolve) => setTimeout(resolve, left))
  await receiver.up()
  const upAt = Date.now()
  ctx.log(`delivery (${rig.kind}): receiver back after ${upAt - downAt} ms down, ${load.okTotal} waiting`)
  // Long enough for the last retry step to come round twice and the whole line to drain slowly.
  await waitFor('delivering after the outage', async () => (await rig.waiting()).pending === 0, outageMs + 300_000, 50)
  const path = `/hooks/${rig.endpoints[0]}`
  const stats = (await receiver.stats())[path]
  return {
    outageMs: upAt - downAt,
    events: load.okTotal,
    delivered: stats?.distinct ?? 0,
    afterReturnMs: Math.max(0, (stats?.lastNewAt ?? upAt) - upAt),
    duplicates: (stats?.received ?? 0) - (stats?.distinct ?? 0),
    lostAnswers: stats?.lostAnswers ?? 0,
    failedAttempts: (await rig.attempts('retry')) - failedBefore,
    dead: (await rig.waiting()).dead,
  }
}
