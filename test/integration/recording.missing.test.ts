import { asc, eq } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { toGlobalId } from '../../src/adapters/graphql/global.id.js'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { recordingMissing } from '../../src/storage/tables/recording.table.js'
import { webhookEvents } from '../../src/storage/tables/webhook.table.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { deliverTo, SECRET, TEST_CONFIG } from '../support/gateway.fixture.js'
import { type Receipt, type Receiver, startReceiver, WEBHOOK_SECRET } from '../support/receiver.process.js'

const GRACE_MS = 1500

/**
 * `recording.missing`: a task that ended with `live_only` 0 and has no recording after
 * `archive.graceMs` is told once, by whichever of two instances on one database decides it
 * first; never for a live-only task, nor for one whose file came; only to its code's endpoints.
 */
describe(`recording.missing after the grace, on ${driverName}`, { timeout: 120_000 }, () => {
  let db: TestDatabase
  let receiver: Receiver
  const gateways: Gateway[] = []
  const now = String(Math.floor(Date.now() / 1000))

  // A task's start and end (its type 0 and type 1), live only or not, then its type 2 if archived.
  const play = async (
    gateway: Gateway,
    code: string,
    taskId: string,
    options: { liveOnly: boolean; archived: boolean; endLiveOnly?: boolean },
  ) => {
    const samples = sampleCallbacks(taskId, code)
    const flag = (liveOnly: boolean) => (liveOnly ? '1' : '0')
    const steps: Array<[unknown, string]> = [
      [samples.liveStart, flag(options.liveOnly)],
      [samples.liveEnd, flag(options.endLiveOnly ?? options.liveOnly)],
      ...(options.archived ? [[samples.archived, flag(options.liveOnly)] as [unknown, string]] : []),
    ]
    for (const [fields, liveOnly] of steps) {
      const answer = await deliverTo(gateway, { ...(fields as object), created_at: now, live_only: liveOnly } as Record<
        string,
        string
      >)
      expect(answer.status).toBe(200)
    }
  }

  beforeAll(async () => {
    db = await openTestDatabase()
    receiver = await startReceiver()
    const config = loadConfig({
      env: {},
      value: {
        ...TEST_CONFIG,
        services: [
          { serviceCode: 'ALPHA', secrets: [SECRET] },
          { serviceCode: 'BRAVO', secrets: [SECRET] },
        ],
        archive: { graceMs: GRACE_MS },
        webhooks: {
          retrySchedule: ['200ms', '500ms'],
          endpoints: [
            {
              name: 'vod',
              url: `${receiver.url}/hooks/vod`,
              secret: WEBHOOK_SECRET,
              serviceCodes: ['ALPHA'],
              events: ['recording.*'],
            },
          ],
        },
      },
    })
    // Two instances on one database: each looks, each task is told once.
    for (let i = 0; i < 2; i++) gateways.push(await startGateway(config, { database: db.database }))
  })

  afterAll(async () => {
    for (const gateway of gateways) await gateway.close()
    await receiver?.stop()
    await db?.drop()
  })

  const decided = () => db.database.db.select().from(recordingMissing).orderBy(asc(recordingMissing.taskId))
  const missingOf = async () =>
    (await receiver.received('/hooks/vod')).filter((receipt: Receipt) => receipt.body.type === 'recording.missing')

  it(
    'tells a task ended without its recording once, after the grace; none for a task live only at its end, nor ' +
      'for an archived task',
    async () => {
      const [one, two] = gateways as [Gateway, Gateway]
      const startedAt = Date.now()
      await play(one, 'ALPHA', 'miss-1', { liveOnly: false, archived: false })
      await play(two, 'ALPHA', 'live-only-1', { liveOnly: true, archived: false })
      // Started with live_only 0, ended with 1: what ended the task decides, so it is live only.
      await play(one, 'ALPHA', 'ended-live-only-1', { liveOnly: false, endLiveOnly: true, archived: false })
      await play(one, 'ALPHA', 'archived-1', { liveOnly: false, archived: true })
      await play(two, 'BRAVO', 'miss-bravo', { liveOnly: false, archived: false })
      await expect.poll(async () => (await missingOf()).length, { timeout: 60_000 }).toBeGreaterThan(0)
      const [first] = await missingOf()
      // Not before the grace: the task ended after startedAt.
      expect(Date.parse(first?.body.timestamp ?? '')).toBeGreaterThanOrEqual(startedAt + GRACE_MS)
      expect(first?.verified).toBe(true)
      expect(first?.body.data).toMatchObject({
        id: toGlobalId('Task', 'ALPHA', 'miss-1'),
        taskId: 'miss-1',
        serviceCode: 'ALPHA',
        status: 'ENDED',
        liveOnly: false,
        userName: 'alice',
        graceMs: GRACE_MS,
      })
      // Both missing tasks decided (BRAVO's told to no endpoint of ALPHA's): nothing is left to decide,
      // and the outbox holds one event, delivered under one id however many instances looked.
      await expect
        .poll(async () => (await decided()).map((row) => row.taskId), { timeout: 30_000 })
        .toEqual(['miss-1', 'miss-bravo'])
      const events = await db.database.db
        .select()
        .from(webhookEvents)
        .where(eq(webhookEvents.type, 'recording.missing'))
      expect(events.map((event) => [event.serviceCode, event.taskId]).sort()).toEqual([
        ['ALPHA', 'miss-1'],
        ['BRAVO', 'miss-bravo'],
      ])
      const told = await missingOf()
      expect(new Set(told.map((receipt) => receipt.id)).size).toBe(1)
      expect(told.every((receipt) => receipt.body.data.taskId === 'miss-1')).toBe(true)
    },
  )
})
