import { randomUUID } from 'node:crypto'
import { asc } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { callbacks } from '../../src/storage/tables/callback.table.js'
import { refusals } from '../../src/storage/tables/refusal.table.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { type Answer, send, signFor, TEST_CONFIG } from '../support/gateway.fixture.js'
import { startTestGateway, type TestGateway } from '../support/gateway.mode.js'
import { metricValue, scrapeMetrics } from '../support/metrics.scrape.js'

/** A gateway with the given ingest limits on a database of its own. */
function gatewayWith(ingest: Record<string, unknown>) {
  const parts = {} as { db: TestDatabase; gateway: TestGateway }
  beforeAll(async () => {
    parts.db = await openTestDatabase()
    parts.gateway = await startTestGateway({ ...TEST_CONFIG, ingest }, parts.db)
  })
  afterAll(async () => {
    await parts.gateway?.close()
    await parts.db?.drop()
  })
  return parts
}

const form = { 'content-type': 'application/x-www-form-urlencoded' }
const fields = () =>
  new URLSearchParams(sampleCallbacks(`flood-${randomUUID()}`).liveStart as Record<string, string>).toString()

/** One delivery of every kind of junk, with the code each must still be answered with. */
function junk(gateway: TestGateway): Array<[Promise<Answer>, string]> {
  const url = `${gateway.url}/callbacks`
  const stale = signFor(gateway, sampleCallbacks(`flood-${randomUUID()}`).liveStart as Record<string, string>, {
    nowMs: Date.now() - 3_600_000,
  })
  return [
    [send({ method: 'POST', url, headers: form, body: fields() }), 'SIGNATURE_MISSING'],
    [
      send({
        method: 'POST',
        url,
        headers: { ...form, 'svc-signature': 'f'.repeat(64), 'svc-timestamp': String(Date.now()) },
        body: fields(),
      }),
      'SIGNATURE_INVALID',
    ],
    [send(stale), 'TIMESTAMP_STALE'],
    [send({ method: 'POST', url, headers: form, body: 'type=0&service_code=NOBODY' }), 'UNKNOWN_SERVICE'],
    [send({ method: 'POST', url, headers: form, body: 'type=0' }), 'MISSING_FIELDS'],
    [
      send({ method: 'POST', url, headers: { 'content-type': 'application/json' }, body: '{}' }),
      'UNSUPPORTED_MEDIA_TYPE',
    ],
    [send({ method: 'PUT', url, headers: form, body: fields() }), 'METHOD_NOT_ALLOWED'],
  ]
}

async function expectAnsweredWithOwnCodes(deliveries: Array<[Promise<Answer>, string]>) {
  for (const [delivery, code] of deliveries) {
    const answer = await delivery
    expect(answer.body.code, answer.text).toBe(code)
    expect(answer.status).toBeLessThan(500)
  }
}

describe(`refused deliveries are rate limited per source (${driverName})`, () => {
  const parts = gatewayWith({ refusedPerMinute: 5 })
  const refusedRows = () => parts.db.database.db.select().from(refusals).orderBy(asc(refusals.id))
  let firstJunkAt = 0
  // Five at once, then one more every 12 s: a slow machine may have earned one since.
  const recordable = () => 5 + Math.floor(((Date.now() - firstJunkAt) * 5) / 60_000)

  it('a burst of junk from one address is answered in full, but only the first few are recorded', async () => {
    firstJunkAt = Date.now()
    const bursts = Array.from({ length: 4 }, () => junk(parts.gateway)).flat()
    await expectAnsweredWithOwnCodes(bursts)
    const rows = await refusedRows()
    expect(rows.length).toBeGreaterThanOrEqual(5)
    expect(rows.length).toBeLessThanOrEqual(recordable())
    expect(rows.every((row) => row.remoteAddress === '127.0.0.1')).toBe(true)
  })

  it('a burst of valid signed callbacks from the same address is never limited, while its junk still is', async () => {
    const taskIds = Array.from({ length: 40 }, () => `flood-valid-${randomUUID()}`)
    const answers = await Promise.all(
      taskIds.map((taskId) =>
        send(signFor(parts.gateway, sampleCallbacks(taskId).liveStart as Record<string, string>)),
      ),
    )
    expect(answers.map((answer) => answer.status)).toEqual(taskIds.map(() => 200))
    const stored = await parts.db.database.db.select({ taskId: callbacks.taskId }).from(callbacks)
    expect(new Set(stored.map((row) => row.taskId))).toEqual(new Set(taskIds))
    // The bucket is still empty: junk after them is answered and still not recorded.
    await expectAnsweredWithOwnCodes(junk(parts.gateway))
    expect((await refusedRows()).length).toBeLessThanOrEqual(recordable())
  })

  it('counts every callback by type and verdict, recorded or not, and times each answer', async () => {
    const samples = await scrapeMetrics(parts.gateway.url)
    const callbacksBy = (labels: Record<string, string>) => metricValue(samples, 'livegate_callbacks_total', labels)
    expect(callbacksBy({ type: '0', verdict: 'kept' })).toBe(40)
    expect(callbacksBy({ verdict: 'SIGNATURE_MISSING' })).toBe(5)
    expect(callbacksBy({ type: '0', verdict: 'TIMESTAMP_STALE' })).toBe(5)
    expect(callbacksBy({ type: 'unknown', verdict: 'UNSUPPORTED_MEDIA_TYPE' })).toBe(5)
    expect(metricValue(samples, 'livegate_ingest_seconds_count', { outcome: 'refused' })).toBe(35)
    expect(metricValue(samples, 'livegate_ingest_seconds_count', { outcome: 'kept' })).toBe(40)
  })
})

describe(`the refusals table is capped (${driverName})`, () => {
  const parts = gatewayWith({ refusedPerMinute: 100_000, refusedMaxRows: 10 })

  it('keeps the newest refusals up to the cap and prunes the oldest', async () => {
    for (let n = 0; n < 25; n += 1) {
      const answer = await send({
        method: 'POST',
        url: `${parts.gateway.url}/callbacks?n=${n}`,
        headers: form,
        body: fields(),
      })
      expect(answer.body.code).toBe('SIGNATURE_MISSING')
    }
    const rows = await parts.db.database.db.select({ query: refusals.query }).from(refusals).orderBy(asc(refusals.id))
    expect(rows.map((row) => row.query)).toEqual(Array.from({ length: 10 }, (_, index) => `n=${index + 15}`))
  })
})
