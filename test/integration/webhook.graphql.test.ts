import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { endpointStates } from '../../src/storage/outbound/webhook.queries.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { deliverTo, TEST_CONFIG } from '../support/gateway.fixture.js'
import { startTestGateway, type TestGateway } from '../support/gateway.mode.js'
import { graphql } from '../support/graphql.client.js'
import { type Receiver, startReceiver, WEBHOOK_SECRET } from '../support/receiver.process.js'

// Webhook endpoints seen and steered from the graph: scoped by the key's service codes, changed
// only by a key that may operate.

const KEYS = { admin: 'key-admin', a: 'key-a', b: 'key-b', readA: 'key-read-a' }
const as = (key: string) => ({ headers: { authorization: `Bearer ${key}` } })

let db: TestDatabase
let receiver: Receiver
let gateway: TestGateway

beforeAll(async () => {
  db = await openTestDatabase()
  receiver = await startReceiver()
  const endpoint = (name: string, serviceCodes: string[] | '*') => ({
    name,
    url: `${receiver.url}/hooks/${name}`,
    secret: WEBHOOK_SECRET,
    serviceCodes,
    events: ['callback.live_start'],
  })
  const config = {
    ...TEST_CONFIG,
    apiKeys: [
      { name: 'admin', key: KEYS.admin, serviceCodes: ['*'], can: ['operate'] },
      { name: 'a', key: KEYS.a, serviceCodes: ['TESTING'], can: ['operate'] },
      { name: 'b', key: KEYS.b, serviceCodes: ['ROTATING'], can: ['operate'] },
      { name: 'readA', key: KEYS.readA, serviceCodes: ['TESTING'] },
    ],
    webhooks: {
      retrySchedule: ['100ms'],
      // A limit against a receiver that hangs, not a measure: a busy machine's receiver may take seconds to answer.
      timeoutMs: 15_000,
      endpoints: [endpoint('opsA', ['TESTING']), endpoint('opsB', ['ROTATING']), endpoint('opsAll', '*')],
    },
  }
  gateway = await startTestGateway(config, db)
})

afterAll(async () => {
  await gateway?.close()
  await receiver.stop()
  await db.drop()
})

const ENDPOINTS = `{ webhookEndpoints { name url enabled state pending deadLetters lastError serviceCodes
  deliveries(first: 10) { totalCount edges { node { eventId eventType status attempts lastStatusCode lastError
    nextAttemptAt createdAt deliveredAt } } } } }`

describe('webhookEndpoints', () => {
  it('shows a key only the endpoints its service codes cover', async () => {
    const names = async (key: string) =>
      ((await graphql(gateway, ENDPOINTS, {}, as(key))).data?.webhookEndpoints as Array<{ name: string }>).map(
        (endpoint) => endpoint.name,
      )
    expect(await names(KEYS.admin)).toEqual(['opsA', 'opsB', 'opsAll'])
    expect(await names(KEYS.a)).toEqual(['opsA'])
    expect(await names(KEYS.b)).toEqual(['opsB'])
  })

  it(
    'lets a key of another code neither replay nor switch ' + 'an endpoint, and a read-only key change nothing',
    async () => {
      const replay =
        `mutation($endpoint: String!) { ` +
        `redeliverWebhooks(endpoint: $endpoint, since: ` +
        `"2020-01-01T00:00:00Z") }`
      const switchOff =
        `mutation($endpoint: String!) { setWebhookEndpointEnabled(endpoint: $endpoint, enabled: false) { name ` +
        `enabled } }`
      for (const query of [replay, switchOff]) {
        const other = await graphql(gateway, query, { endpoint: 'opsA' }, as(KEYS.b))
        expect(other.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT')
        expect(other.errors?.[0]?.message).toContain('No webhook endpoint is named "opsA"')
        const readOnly = await graphql(gateway, query, { endpoint: 'opsA' }, as(KEYS.readA))
        expect(readOnly.errors?.[0]?.extensions?.code).toBe('FORBIDDEN')
      }
      expect((await endpointStates(gateway.database.db, ['opsA'])).get('opsA')?.enabled).toBe(true)
    },
  )

  it('lists dead letters and replays them by id and by since', async () => {
    await receiver.plan('/hooks/opsA', [{ status: 500 }, { status: 500 }, { status: 500 }, { status: 500 }])
    const taskOne = `gql-${Date.now()}-1`
    const taskTwo = `gql-${Date.now()}-2`
    await deliverTo(gateway, sampleCallbacks(taskOne).liveStart as Record<string, string>)
    await deliverTo(gateway, sampleCallbacks(taskTwo).liveStart as Record<string, string>)
    const dead =
      `{ webhookEndpoints { name state deadLetters lastError deliveries(status: DEAD, first: 10) { totalCount ` +
      `edges { node { eventId status attempts lastStatusCode } } } } }`
    await expect
      .poll(
        async () =>
          (await graphql(gateway, dead, {}, as(KEYS.a))).data?.webhookEndpoints[0]?.deliveries.totalCount as number,
        { timeout: 20_000 },
      )
      .toBe(2)
    const answer = await graphql(gateway, dead, {}, as(KEYS.a))
    const [endpoint] = answer.data?.webhookEndpoints
    expect(endpoint).toMatchObject({ name: 'opsA', state: 'FAILING', deadLetters: 2, lastError: 'HTTP 500' })
    const edges = endpoint.deliveries.edges as Array<{
      node: { eventId: string; attempts: number; lastStatusCode: number }
    }>
    expect(edges.every((edge) => edge.node.attempts === 2 && edge.node.lastStatusCode === 500)).toBe(true)
    const first = edges[1]?.node.eventId as string
    const byId = await graphql(
      gateway,
      `mutation($ids: [ID!]) { redeliverWebhooks(endpoint: "opsA", eventIds: $ids) }`,
      { ids: [first] },
      as(KEYS.a),
    )
    expect(byId.data?.redeliverWebhooks).toBe(1)
    // The audit says it as a person would: one delivery, not "1 deliveries".
    const audit = await graphql(
      gateway,
      '{ actions(first: 1) { edges { node { kind endpoint message } } } }',
      {},
      as(KEYS.a),
    )
    expect(audit.data?.actions.edges[0]?.node).toEqual({
      kind: 'REPLAY_WEBHOOKS',
      endpoint: 'opsA',
      message: '1 delivery put back in line.',
    })
    const deliveredCount = `{ webhookEndpoints { state deliveries(status: DELIVERED) { totalCount } } }`
    await expect
      .poll(
        async () =>
          (await graphql(gateway, deliveredCount, {}, as(KEYS.a))).data?.webhookEndpoints[0]?.deliveries.totalCount,
        { timeout: 20_000 },
      )
      .toBe(1)
    const bySince = await graphql(
      gateway,
      `mutation($since: DateTime) { redeliverWebhooks(endpoint: "opsA", since: $since) }`,
      { since: new Date(Date.now() - 60_000).toISOString() },
      as(KEYS.a),
    )
    expect(bySince.data?.redeliverWebhooks).toBe(2)
    await expect
      .poll(
        async () =>
          (await graphql(gateway, deliveredCount, {}, as(KEYS.a))).data?.webhookEndpoints[0]?.deliveries.totalCount,
        { timeout: 20_000 },
      )
      .toBe(2)
    expect((await graphql(gateway, deliveredCount, {}, as(KEYS.a))).data?.webhookEndpoints[0]?.state).toBe('HEALTHY')
    const receipts = await receiver.received('/hooks/opsA')
    expect(receipts.every((receipt) => receipt.verified)).toBe(true)
    expect(receipts.filter((receipt) => receipt.id === first).map((receipt) => receipt.answered)).toEqual([
      500, 500, 200, 200,
    ])
  })

  it('switches an endpoint off and on', async () => {
    const off = await graphql(
      gateway,
      `mutation { setWebhookEndpointEnabled(endpoint: "opsB", enabled: false) { name enabled state } }`,
      {},
      as(KEYS.b),
    )
    expect(off.data?.setWebhookEndpointEnabled).toEqual({ name: 'opsB', enabled: false, state: 'DISABLED' })
    const on = await graphql(
      gateway,
      `mutation { setWebhookEndpointEnabled(endpoint: "opsB", enabled: true) { name enabled state } }`,
      {},
      as(KEYS.b),
    )
    expect(on.data?.setWebhookEndpointEnabled).toEqual({ name: 'opsB', enabled: true, state: 'HEALTHY' })
  })

  it('pages deliveries with a cursor', async () => {
    const page =
      `query($after: String) { webhookEndpoints { name deliveries(first: 1, after: $after) { pageInfo { ` +
      `hasNextPage endCursor } edges { node { eventId } } } } }`
    const first = (await graphql(gateway, page, {}, as(KEYS.a))).data?.webhookEndpoints[0]?.deliveries
    expect(first.pageInfo.hasNextPage).toBe(true)
    const second = (await graphql(gateway, page, { after: first.pageInfo.endCursor }, as(KEYS.a))).data
      ?.webhookEndpoints[0]?.deliveries
    expect(second.edges[0].node.eventId).not.toBe(first.edges[0].node.eventId)
  })
})
