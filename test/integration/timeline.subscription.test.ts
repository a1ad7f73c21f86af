import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { toGlobalId } from '../../src/adapters/graphql/global.id.js'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { openIncident } from '../../src/storage/alerts/incident.statements.js'
import { appendWebhookEvents } from '../../src/storage/outbound/webhook.statements.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { deliverTo, SECRET, TEST_CONFIG } from '../support/gateway.fixture.js'
import { type Subscribed, subscribe } from '../support/subscription.client.js'

const KEYS = { a: 'timeline-live-a', b: 'timeline-live-b' }
const bearer = (key: string) => ({ authorization: `Bearer ${key}` })
const TASK = 'timeline-live-task'
const ID = toGlobalId('Task', 'TLS_A', TASK)
const SUBSCRIPTION = `subscription Line($id: ID!, $after: String) {
  taskTimeline(id: $id, after: $after) { cursor at kind source summary }
}`

interface Event {
  taskTimeline: { cursor: string; at: string; kind: string; source: string; summary: string }
}

// Subscription.taskTimeline over real graphql-ws sockets: the line's entries, then the new ones as they happen,
// and after a gateway restart, resumed from the last cursor seen with nothing missed and nothing twice.
describe(`Subscription.taskTimeline (${driverName})`, () => {
  let db: TestDatabase
  let gateway: Gateway
  const config = loadConfig({
    env: {},
    value: {
      ...TEST_CONFIG,
      services: [
        { serviceCode: 'TLS_A', secrets: [SECRET] },
        { serviceCode: 'TLS_B', secrets: [SECRET] },
      ],
      apiKeys: [
        { name: 'a', key: KEYS.a, serviceCodes: ['TLS_A'] },
        { name: 'b', key: KEYS.b, serviceCodes: ['TLS_B'] },
      ],
    },
  })
  const fields = sampleCallbacks(TASK, 'TLS_A') as Record<string, Record<string, string>>
  const open: Array<Subscribed<Event>> = []
  const line = (after?: string, key = KEYS.a) => {
    const subscription = subscribe<Event>(gateway.url, SUBSCRIPTION, { id: ID, after }, bearer(key))
    open.push(subscription)
    return subscription
  }
  const kinds = (subscription: Subscribed<Event>) => subscription.events.map((event) => event.taskTimeline.kind)

  beforeAll(async () => {
    db = await openTestDatabase()
    gateway = await startGateway(config, { database: db.database })
    expect((await deliverTo(gateway, fields.liveStart as Record<string, string>)).status).toBe(200)
  }, 300_000)

  afterAll(async () => {
    for (const subscription of open) await subscription.dispose()
    await gateway?.close()
    await db?.drop()
  })

  it('sends the line, then each new entry as it happens; after a restart, resumes after a cursor', async () => {
    const first = line()
    await expect.poll(() => kinds(first).sort(), { timeout: 30_000 }).toEqual(['CALLBACK', 'STATUS'])
    await deliverTo(gateway, fields.liveResume as Record<string, string>)
    await expect.poll(() => kinds(first), { timeout: 30_000 }).toContain('RECONNECT')
    const seen = first.events.map((event) => event.taskTimeline)
    await first.dispose()

    // The gateway goes away; the line grows while it is down.
    await gateway.close()
    await appendWebhookEvents(db.database.db, [
      {
        type: 'task.health_changed',
        serviceCode: 'TLS_A',
        taskId: TASK,
        occurredAt: new Date(),
        facts: { from: 'HEALTHY', to: 'STARVING', reason: 'its input bytes did not grow' },
      },
    ])
    await openIncident(db.database.db, {
      rule: 'starving',
      severity: 'WARNING',
      state: 'OPEN',
      serviceCode: 'TLS_A',
      taskId: TASK,
      signal: 'task.health',
      summary: 'input stalled',
      startedAt: new Date(),
      openedAt: new Date(),
    })
    gateway = await startGateway(config, { database: db.database })

    const resumed = line(seen.at(-1)?.cursor)
    // (The gateway then resolves the incident: no rule `starving` is configured, which is a new entry too.)
    await expect.poll(() => kinds(resumed).slice(0, 2), { timeout: 30_000 }).toEqual(['HEALTH', 'INCIDENT'])
    await deliverTo(gateway, fields.liveEnd as Record<string, string>)
    await expect.poll(() => kinds(resumed), { timeout: 30_000 }).toEqual(expect.arrayContaining(['CALLBACK', 'STATUS']))
    const after = resumed.events.map((event) => event.taskTimeline)
    // Nothing twice: no entry before the cursor comes again, and each entry comes once.
    const cursors = [...seen, ...after].map((entry) => entry.cursor)
    expect(new Set(cursors).size).toBe(cursors.length)
    expect(after.find((entry) => entry.kind === 'STATUS')?.summary).toMatch(/^status ENDED/)
    expect(resumed.errors).toEqual([])
  })

  it("refuses another tenant's task", async () => {
    const foreign = line(undefined, KEYS.b)
    await expect.poll(() => foreign.errors.length, { timeout: 15_000 }).toBeGreaterThan(0)
    expect(JSON.stringify(foreign.errors)).toMatch(/BAD_USER_INPUT/)
    expect(foreign.events).toEqual([])
  })
})
