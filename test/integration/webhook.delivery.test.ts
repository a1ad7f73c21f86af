import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { endpointStates, deliveryPage } from '../../src/storage/outbound/webhook.queries.js'
import { pruneDeliveries } from '../../src/work/retention.job.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { deliverTo, TEST_CONFIG } from '../support/gateway.fixture.js'
import { startTestGateway, type TestGateway } from '../support/gateway.mode.js'
import { graphql } from '../support/graphql.client.js'
import { scrapeMetrics } from '../support/metrics.scrape.js'
import { type Receiver, startReceiver, WEBHOOK_SECRET } from '../support/receiver.process.js'

// Signed webhooks end to end: a real gateway, a receiver in its own process that verifies every
// signature with the standardwebhooks package, answers steered per endpoint path. In process, or
// `serve --workers 2` with its webhook worker (TEST_GATEWAY=serve): what the tests read is the
// database, GraphQL, /metrics and the log, which both offer.

let db: TestDatabase
let receiver: Receiver

beforeAll(async () => {
  db = await openTestDatabase()
  receiver = await startReceiver()
})

afterAll(async () => {
  await receiver.stop()
  await db.drop()
})

interface EndpointSpec {
  name: string
  serviceCodes?: string[] | '*'
  events?: string[]
  /** `user:password` to put in the URL. */
  credentials?: string
}

function configWith(endpoints: EndpointSpec[], webhooks: Record<string, unknown> = {}, at: Receiver = receiver) {
  return {
    ...TEST_CONFIG,
    webhooks: {
      retrySchedule: ['200ms', '300ms', '400ms'],
      // A limit against a receiver that hangs, not a measure: a busy machine's receiver may take seconds to answer.
      timeoutMs: 15_000,
      ...webhooks,
      endpoints: endpoints.map((endpoint) => ({
        name: endpoint.name,
        url: endpoint.credentials
          ? `${at.url.replace('http://', `http://${endpoint.credentials}@`)}/hooks/${endpoint.name}`
          : `${at.url}/hooks/${endpoint.name}`,
        secret: WEBHOOK_SECRET,
        serviceCodes: endpoint.serviceCodes ?? ['TESTING'],
        ...(endpoint.events ? { events: endpoint.events } : {}),
      })),
    },
  }
}

function gatewayWith(
  endpoints: EndpointSpec[],
  webhooks: Record<string, unknown> = {},
  at: Receiver = receiver,
  logs = false,
): Promise<TestGateway> {
  return startTestGateway(configWith(endpoints, webhooks, at), db, { logs })
}

let taskCounter = 0
function nextTask(): string {
  taskCounter += 1
  return `wh-task-${taskCounter}-${Date.now()}`
}

async function deliveriesOf(gateway: TestGateway, endpoint: string) {
  return deliveryPage(gateway.database.db, endpoint, { limit: 100 })
}

async function endpointState(gateway: TestGateway, endpoint: string) {
  return (await endpointStates(gateway.database.db, [endpoint])).get(endpoint)
}

const REPLAY = `mutation Replay($endpoint: String!, $ids: [ID!], $since: DateTime) {
  redeliverWebhooks(endpoint: $endpoint, eventIds: $ids, since: $since)
}`

/** Replays through the API, as an operator does: the process that answers tells the delivering one. */
async function redeliver(gateway: TestGateway, endpoint: string, which: { ids?: string[]; since?: Date }) {
  const answer = await graphql(gateway, REPLAY, { endpoint, ...which, since: which.since?.toISOString() })
  expect(answer.errors).toBeUndefined()
  return { count: answer.data.redeliverWebhooks as number }
}

describe('webhook delivery', () => {
  it('retries a 500 until a 2xx: one event, four attempts, the same webhook-id, every one signed', async () => {
    const gateway = await gatewayWith([{ name: 'retry500', events: ['callback.live_start'] }])
    try {
      await receiver.plan('/hooks/retry500', [{ status: 500 }, { status: 500 }, { status: 500 }])
      const taskId = nextTask()
      const answer = await deliverTo(gateway, sampleCallbacks(taskId).liveStart as Record<string, string>)
      expect(answer.status).toBe(200)
      await expect
        .poll(async () => (await receiver.received('/hooks/retry500')).map((receipt) => receipt.answered), {
          timeout: 20_000,
        })
        .toEqual([500, 500, 500, 200])
      const receipts = await receiver.received('/hooks/retry500')
      expect(new Set(receipts.map((receipt) => receipt.id)).size).toBe(1)
      expect(receipts.every((receipt) => receipt.verified)).toBe(true)
      const body = receipts[0]?.body
      expect(body?.type).toBe('callback.live_start')
      expect(body?.data).toMatchObject({
        kind: 'LIVE_START',
        taskId,
        serviceCode: 'TESTING',
        userName: 'alice',
        playUrl: expect.stringContaining(taskId),
      })
      expect(typeof body?.data.id).toBe('string')
      expect(body?.position.log).toBe('callbacks')
      // The last answer is stored a moment after the receiver gave it (outcomes are stored in batches).
      await expect
        .poll(async () => (await deliveriesOf(gateway, 'retry500'))[0], { timeout: 20_000 })
        .toMatchObject({ status: 'DELIVERED', attempts: 4, lastStatusCode: 200, eventType: 'callback.live_start' })
    } finally {
      await gateway.close()
    }
  })

  it('keeps a failing delivery as a dead letter after the schedule, and replays it by id and by since', async () => {
    const gateway = await gatewayWith([{ name: 'dead', events: ['callback.live_end'] }], { retrySchedule: ['100ms'] })
    try {
      await receiver.plan('/hooks/dead', [{ status: 500 }, { status: 500 }, { status: 500 }, { status: 500 }])
      const before = new Date(Date.now() - 1000)
      const first = nextTask()
      const second = nextTask()
      await deliverTo(gateway, sampleCallbacks(first).liveEnd as Record<string, string>)
      await deliverTo(gateway, sampleCallbacks(second).liveEnd as Record<string, string>)
      await expect
        .poll(async () => (await deliveriesOf(gateway, 'dead')).map((delivery) => delivery.status), { timeout: 20_000 })
        .toEqual(['DEAD', 'DEAD'])
      const dead = await deliveriesOf(gateway, 'dead')
      expect(dead.every((delivery) => delivery.attempts === 2 && delivery.lastStatusCode === 500)).toBe(true)
      const firstId = dead.find((delivery) => JSON.parse(delivery.body).data.taskId === first)?.eventId as string
      expect(await redeliver(gateway, 'dead', { ids: [firstId] })).toEqual({ count: 1 })
      await expect
        .poll(
          async () => (await deliveriesOf(gateway, 'dead')).find((delivery) => delivery.eventId === firstId)?.status,
          { timeout: 20_000 },
        )
        .toBe('DELIVERED')
      // `since` puts back dead letters and delivered events alike.
      expect(await redeliver(gateway, 'dead', { since: before })).toEqual({ count: 2 })
      await expect
        .poll(async () => (await deliveriesOf(gateway, 'dead')).map((delivery) => delivery.status), { timeout: 20_000 })
        .toEqual(['DELIVERED', 'DELIVERED'])
      const receipts = await receiver.received('/hooks/dead')
      expect(receipts.every((receipt) => receipt.verified)).toBe(true)
      expect(receipts.filter((receipt) => receipt.id === firstId && receipt.answered === 200)).toHaveLength(2)
    } finally {
      await gateway.close()
    }
  })

  it('switches an endpoint off on 410 and keeps what follows as dead letters, with no attempt', async () => {
    const gateway = await gatewayWith([{ name: 'gone', events: ['callback.live_start'] }])
    try {
      await receiver.plan('/hooks/gone', [{ status: 410 }])
      await deliverTo(gateway, sampleCallbacks(nextTask()).liveStart as Record<string, string>)
      await expect.poll(async () => (await endpointState(gateway, 'gone'))?.enabled, { timeout: 20_000 }).toBe(false)
      await deliverTo(gateway, sampleCallbacks(nextTask()).liveStart as Record<string, string>)
      await gateway.settleWebhooks()
      expect((await deliveriesOf(gateway, 'gone')).map((delivery) => delivery.status)).toEqual(['DEAD', 'DEAD'])
      expect(await receiver.received('/hooks/gone')).toHaveLength(1)
      expect(await endpointState(gateway, 'gone')).toMatchObject({
        enabled: false,
        disabledReason: 'answered 410 Gone',
        deadLetters: 2,
        pending: 0,
      })
    } finally {
      await gateway.close()
    }
  })

  it("waits as long as a 429 Retry-After asks, not the schedule's step", async () => {
    const gateway = await gatewayWith([{ name: 'limited', events: ['callback.live_start'] }])
    try {
      await receiver.plan('/hooks/limited', [{ status: 429, retryAfter: 3600 }])
      await deliverTo(gateway, sampleCallbacks(nextTask()).liveStart as Record<string, string>)
      await expect
        .poll(async () => (await deliveriesOf(gateway, 'limited'))[0]?.status, { timeout: 20_000 })
        .toBe('RETRYING')
      const [delivery] = await deliveriesOf(gateway, 'limited')
      expect(delivery?.lastStatusCode).toBe(429)
      // The schedule's first step is 200 ms; the answer asked for an hour.
      expect((delivery?.nextAttemptAt.getTime() ?? 0) - Date.now()).toBeGreaterThan(50 * 60_000)
      expect(await receiver.received('/hooks/limited')).toHaveLength(1)
    } finally {
      await gateway.close()
    }
  })

  it('counts an answer that does not come within timeoutMs as failed, and tries again', async () => {
    // Long enough for a busy receiver's second answer, which must not time out too.
    const gateway = await gatewayWith([{ name: 'slow', events: ['callback.live_start'] }], { timeoutMs: 5000 })
    try {
      await receiver.plan('/hooks/slow', [{ hang: true }])
      await deliverTo(gateway, sampleCallbacks(nextTask()).liveStart as Record<string, string>)
      await expect
        .poll(async () => (await deliveriesOf(gateway, 'slow'))[0]?.status, { timeout: 20_000 })
        .toBe('DELIVERED')
      const [delivery] = await deliveriesOf(gateway, 'slow')
      expect(delivery?.attempts).toBe(2)
      expect((await receiver.received('/hooks/slow')).map((receipt) => receipt.answered)).toEqual(['hang', 200])
    } finally {
      await gateway.close()
    }
  })

  it("sends an endpoint only its service codes' events", async () => {
    const gateway = await gatewayWith([
      { name: 'tenantA', serviceCodes: ['TESTING'], events: ['callback.*'], credentials: 'hooks:p%40ss' },
      { name: 'tenantB', serviceCodes: ['ROTATING'], events: ['callback.*'] },
    ])
    try {
      const a = nextTask()
      const b = nextTask()
      await deliverTo(gateway, sampleCallbacks(a, 'TESTING').liveStart as Record<string, string>)
      await deliverTo(gateway, sampleCallbacks(b, 'ROTATING').liveStart as Record<string, string>)
      await expect.poll(async () => (await receiver.received('/hooks/tenantA')).length, { timeout: 20_000 }).toBe(1)
      await expect.poll(async () => (await receiver.received('/hooks/tenantB')).length, { timeout: 20_000 }).toBe(1)
      expect((await receiver.received('/hooks/tenantA'))[0]?.body.data).toMatchObject({
        taskId: a,
        serviceCode: 'TESTING',
      })
      // A URL's user and password go as Basic authorization.
      expect((await receiver.received('/hooks/tenantA'))[0]?.authorization).toBe(
        `Basic ${Buffer.from('hooks:p@ss').toString('base64')}`,
      )
      expect((await receiver.received('/hooks/tenantB'))[0]?.authorization).toBeNull()
      expect((await receiver.received('/hooks/tenantB'))[0]?.body.data).toMatchObject({
        taskId: b,
        serviceCode: 'ROTATING',
      })
    } finally {
      await gateway.close()
    }
  })

  it(
    'delivers to a receiver that was down once it is up ' + 'again, and after a gateway restart loses nothing',
    async () => {
      const down = await startReceiver()
      const port = down.port
      await down.stop()
      const first = await gatewayWith(
        [{ name: 'outage', events: ['callback.live_start'] }],
        { retrySchedule: Array(20).fill('200ms') },
        down,
      )
      const tasks = [nextTask(), nextTask(), nextTask()]
      let second: TestGateway | undefined
      let up: Receiver | undefined
      try {
        for (const task of tasks) await deliverTo(first, sampleCallbacks(task).liveStart as Record<string, string>)
        await expect
          .poll(
            async () =>
              (await deliveriesOf(first, 'outage')).filter((delivery) => delivery.status === 'RETRYING').length,
            { timeout: 20_000 },
          )
          .toBe(3)
        expect((await deliveriesOf(first, 'outage'))[0]?.lastError).toMatch(/connection failed/)
        await first.close()
        up = await startReceiver(port)
        second = await gatewayWith(
          [{ name: 'outage', events: ['callback.live_start'] }],
          { retrySchedule: Array(20).fill('200ms') },
          up,
        )
        await expect
          .poll(async () => (await deliveriesOf(second as TestGateway, 'outage')).map((delivery) => delivery.status), {
            timeout: 20_000,
          })
          .toEqual(['DELIVERED', 'DELIVERED', 'DELIVERED'])
        const receipts = await up.received('/hooks/outage')
        expect(receipts.every((receipt) => receipt.verified)).toBe(true)
        expect(new Set(receipts.map((receipt) => receipt.body.data.taskId))).toEqual(new Set(tasks))
      } finally {
        await second?.close()
        await up?.stop()
      }
    },
  )

  it(
    'logs one line per failed attempt, never the secret or the body; counts attempts; prunes finished deliveries ' +
      'in bulk',
    async () => {
      const endpoints = [{ name: 'counted', events: ['callback.live_start'] }]
      const gateway = await gatewayWith(endpoints, { retrySchedule: ['100ms'] }, receiver, true)
      try {
        await receiver.plan('/hooks/counted', [{ status: 500 }, { status: 502 }])
        const dead = nextTask()
        const delivered = nextTask()
        await deliverTo(gateway, sampleCallbacks(dead).liveStart as Record<string, string>)
        await expect
          .poll(async () => (await deliveriesOf(gateway, 'counted'))[0]?.status, { timeout: 20_000 })
          .toBe('DEAD')
        await deliverTo(gateway, sampleCallbacks(delivered).liveStart as Record<string, string>)
        await expect
          .poll(async () => (await deliveriesOf(gateway, 'counted'))[0]?.status, { timeout: 20_000 })
          .toBe('DELIVERED')
        const lines = gateway.logLines()
        const failed = lines
          .map((line) => JSON.parse(line) as Record<string, unknown>)
          .filter((entry) => String(entry.msg).startsWith('webhooks: attempt'))
        expect(failed.map((entry) => [entry.endpoint, entry.attempt, entry.statusCode])).toEqual([
          ['counted', 1, 500],
          ['counted', 2, 502],
        ])
        const log = lines.join('')
        expect(log).not.toContain(WEBHOOK_SECRET.slice(6))
        expect(log).not.toContain(dead)
        const samples = await scrapeMetrics(gateway.url)
        const attempts = (outcome: string) =>
          samples.find(
            (sample) =>
              sample.name === 'livegate_webhook_attempts_total' &&
              sample.labels.endpoint === 'counted' &&
              sample.labels.outcome === outcome,
          )?.value
        expect([attempts('retry'), attempts('dead'), attempts('delivered')]).toEqual([1, 1, 1])
        expect(
          samples.some(
            (sample) =>
              sample.name === 'livegate_webhook_delivery_seconds_count' &&
              sample.labels.endpoint === 'counted' &&
              sample.value === 1,
          ),
        ).toBe(true)
        // Delivered records go after deliveredRetention (7 days), dead letters after 30.
        // The retention job's own prune, on the same database, with the clock moved on.
        const config = loadConfig({ env: {}, value: configWith(endpoints, { retrySchedule: ['100ms'] }) })
        const retention = {
          db: gateway.database.db,
          retention: config.retention,
          log: { warn() {}, info() {}, debug() {} },
        }
        const prune = (days: number) =>
          pruneDeliveries(retention, config.webhooks.deliveredRetention, new Date(Date.now() + days * 86_400_000))
        await prune(8)
        expect((await deliveriesOf(gateway, 'counted')).map((delivery) => delivery.status)).toEqual(['DEAD'])
        await prune(31)
        expect(await deliveriesOf(gateway, 'counted')).toEqual([])
      } finally {
        await gateway.close()
      }
    },
  )

  it('switches off an endpoint that has failed every attempt for disableAfter, and says so', async () => {
    const gateway = await gatewayWith([{ name: 'failing', events: ['callback.live_start'] }], {
      retrySchedule: Array(50).fill('200ms'),
      disableAfter: '1s',
    })
    try {
      await receiver.plan('/hooks/failing', Array(50).fill({ status: 500 }))
      await deliverTo(gateway, sampleCallbacks(nextTask()).liveStart as Record<string, string>)
      await expect.poll(async () => (await endpointState(gateway, 'failing'))?.enabled, { timeout: 20_000 }).toBe(false)
      expect((await endpointState(gateway, 'failing'))?.disabledReason).toMatch(/every attempt failed/)
      expect((await deliveriesOf(gateway, 'failing')).map((delivery) => delivery.status)).toEqual(['DEAD'])
      await expect
        .poll(
          async () =>
            (await scrapeMetrics(gateway.url)).find(
              (sample) => sample.name === 'livegate_webhook_endpoint_disabled' && sample.labels.endpoint === 'failing',
            )?.value,
          { timeout: 20_000 },
        )
        .toBe(1)
    } finally {
      await gateway.close()
    }
  })

  it(
    'cuts an attempt under way when the gateway stops, and ' + 'the next gateway sends it again with the same id',
    async () => {
      const first = await gatewayWith([{ name: 'cut', events: ['callback.live_start'] }], { timeoutMs: 120_000 })
      let second: TestGateway | undefined
      try {
        await receiver.plan('/hooks/cut', [{ hang: true }])
        await deliverTo(first, sampleCallbacks(nextTask()).liveStart as Record<string, string>)
        await expect.poll(async () => (await receiver.received('/hooks/cut')).length, { timeout: 20_000 }).toBe(1)
        await first.close()
        const [waiting] = await deliveriesOf(first, 'cut')
        expect(waiting).toMatchObject({
          status: 'RETRYING',
          attempts: 1,
          lastError: 'cut short: the gateway was stopping',
          owner: null,
        })
        second = await gatewayWith([{ name: 'cut', events: ['callback.live_start'] }], { timeoutMs: 120_000 })
        await expect
          .poll(async () => (await receiver.received('/hooks/cut')).map((receipt) => receipt.answered), {
            timeout: 20_000,
          })
          .toEqual(['hang', 200])
        const receipts = await receiver.received('/hooks/cut')
        expect(receipts[0]?.id).toBe(receipts[1]?.id)
      } finally {
        await second?.close()
      }
    },
  )
})
