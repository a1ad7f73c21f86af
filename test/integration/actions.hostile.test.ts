import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { emptyTaskState } from '../../src/fold/task.fold.js'
import { startTaskListServer, type TaskListServer } from '../../src/simulator/task-list.server.js'
import { EMPTY_TASK_LIST } from '../../src/simulator/task-list.snapshot.js'
import { writeChanges } from '../../src/storage/graph/graph.statements.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { startTestGateway, type TestGateway } from '../support/gateway.mode.js'
import { graphql } from '../support/graphql.client.js'
import { metricValue, scrapeMetrics } from '../support/metrics.scrape.js'
import { overSocket } from '../support/socket.execute.js'
import { subscribe } from '../support/subscription.client.js'
import { type Receiver, startReceiver, WEBHOOK_SECRET } from '../support/receiver.process.js'

// Issue 32's six reproductions, from outside: two tenants A and B, keys that operate and keys that
// only read, against the simulated cloud (which records every signed action it is asked for).
const SECRET = 'abc'
const LIMIT = 30
const KEYS = {
  operateA: 'hostile-op-a',
  readA: 'hostile-read-a',
  operateB: 'hostile-op-b',
  flood: 'hostile-read-flood',
  many: 'hostile-op-many',
  race: 'hostile-op-race',
}
const as = (key: string) => ({ headers: { authorization: `Bearer ${key}` } })
const taskId = (code: string, id: string) => Buffer.from(`Task:${JSON.stringify([code, id])}`).toString('base64url')
const STOP = `mutation Stop($id: ID!, $reason: String, $key: String) {
  stopTask(id: $id, reason: $reason, idempotencyKey: $key) { action { id state serviceCode } }
}`
const MESSAGE = `mutation Say($code: String!, $user: String!, $text: String!, $from: String, $key: String) {
  sendMessage(serviceCode: $code, userName: $user, text: $text, from: $from, idempotencyKey: $key) { action { id state
    } }
}`
const AUDIT =
  `query Audit { actions(first: 100) { totalCount edges { node { kind serviceCode requestedBy reason state refusal ` +
  `endpoint message } } } }`
const REPLAY = `mutation Replay($endpoint: String!, $ids: [ID!], $since: DateTime, $reason: String) {
  redeliverWebhooks(endpoint: $endpoint, eventIds: $ids, since: $since, reason: $reason)
}`
const SWITCH = `mutation Switch($endpoint: String!, $on: Boolean!) {
  setWebhookEndpointEnabled(endpoint: $endpoint, enabled: $on, reason: "maintenance") { name enabled }
}`
type AuditNode = {
  kind: string
  serviceCode: string
  requestedBy: string | null
  reason: string | null
  state: string
  refusal: string | null
  endpoint: string | null
  message: string | null
}

describe(`hostile input on the acting and replaying surfaces (${driverName})`, { timeout: 240_000 }, () => {
  let db: TestDatabase
  let gateway: TestGateway
  let cloud: TaskListServer
  let receiver: Receiver

  const audit = async (key: string): Promise<AuditNode[]> =>
    (await graphql(gateway, AUDIT, {}, as(key))).data.actions.edges.map((edge: { node: AuditNode }) => edge.node)
  const cancels = () => cloud.actions.filter((action) => action.operation === 'cancel_task').length
  const messages = () => cloud.actions.filter((action) => action.operation === 'send_txt_msg').length

  beforeAll(async () => {
    cloud = await startTaskListServer({
      services: [
        { serviceCode: 'A', secret: SECRET },
        { serviceCode: 'B', secret: SECRET },
      ],
      source: () => EMPTY_TASK_LIST,
    })
    receiver = await startReceiver()
    db = await openTestDatabase()
    const endpoint = (name: string, serviceCodes: string[]) => ({
      name,
      url: `${receiver.url}/hooks/${name}`,
      secret: WEBHOOK_SECRET,
      serviceCodes,
      events: ['action.succeeded'],
    })
    gateway = await startTestGateway(
      {
        port: 0,
        log: { level: 'silent' },
        services: [
          { serviceCode: 'A', secrets: [SECRET], baseUrl: cloud.url },
          { serviceCode: 'B', secrets: [SECRET], baseUrl: cloud.url },
        ],
        apiKeys: [
          { name: 'operate-A', key: KEYS.operateA, serviceCodes: ['A'], can: ['operate'] },
          { name: 'read-A', key: KEYS.readA, serviceCodes: ['A'] },
          { name: 'operate-B', key: KEYS.operateB, serviceCodes: ['B'], can: ['operate'] },
          { name: 'flood-A', key: KEYS.flood, serviceCodes: ['A'] },
          { name: 'many-A', key: KEYS.many, serviceCodes: ['A'], can: ['operate'] },
          { name: 'race-A', key: KEYS.race, serviceCodes: ['A'], can: ['operate'] },
        ],
        upstream: { pollIntervalMs: 0 },
        limits: { actionsPerMinute: LIMIT },
        graphql: { maxAliases: 40 },
        webhooks: {
          retrySchedule: ['100ms'],
          // A limit against a receiver that hangs, not a measure: a busy machine's receiver may take seconds to answer.
          timeoutMs: 15_000,
          endpoints: [endpoint('hooks-A', ['A']), endpoint('hooks-B', ['B'])],
        },
      },
      db,
    )
    const tasks = [...Array.from({ length: 40 }, (_, i) => emptyTaskState('A', `a-${i}`)), emptyTaskState('B', 'b-1')]
    await writeChanges(gateway.database.db, { tasks, users: [] }, new Date())
  })

  afterAll(async () => {
    await gateway?.close()
    await cloud?.close()
    await receiver?.stop()
    await db?.drop()
  })

  it(
    "1. records a read-only key's refusal only under a code it reads, never in another tenant's audit or feed, and " +
      'rate limits refusals',
    async () => {
      const subscribed = { field: 'actionChanged' }
      const feedB = subscribe(
        gateway.url,
        'subscription { actionChanged { requestedBy serviceCode } }',
        {},
        { authorization: `Bearer ${KEYS.operateB}` },
      )
      // The feed in place before anything it must show or hide (counted on /metrics, for every worker).
      await expect
        .poll(async () => metricValue(await scrapeMetrics(gateway.url), 'livegate_subscriptions', subscribed))
        .toBe(1)
      const intoB = await graphql(gateway, STOP, { id: taskId('B', 'b-1'), reason: 'injected' }, as(KEYS.readA))
      expect(intoB.errors?.[0]?.extensions?.code).toBe('FORBIDDEN')
      for (const code of ['B', 'NOWHERE']) {
        const said = await graphql(gateway, MESSAGE, { code, user: 'victim', text: 'hi' }, as(KEYS.readA))
        expect(said.errors?.[0]?.extensions?.code).toBe('FORBIDDEN')
      }
      // A refusal under the key's own code is recorded there, for A's operators to see.
      const own = await graphql(gateway, STOP, { id: taskId('A', 'a-0'), reason: 'tried' }, as(KEYS.readA))
      expect(own.errors?.[0]?.extensions?.code).toBe('FORBIDDEN')
      // B's operator then acts, so B's feed has something to show; the first event must be its own.
      expect(
        (await graphql(gateway, STOP, { id: taskId('B', 'b-1') }, as(KEYS.operateB))).data.stopTask.action.state,
      ).toBe('SUCCEEDED')
      await expect.poll(() => feedB.events.length).toBeGreaterThan(0)
      expect(feedB.events.every((event) => event.actionChanged.requestedBy === 'operate-B')).toBe(true)
      await feedB.dispose()
      expect((await audit(KEYS.operateB)).filter((row) => row.requestedBy === 'read-A')).toEqual([])
      expect((await audit(KEYS.operateA)).filter((row) => row.requestedBy === 'read-A')).toMatchObject([
        { serviceCode: 'A', refusal: 'FORBIDDEN', reason: 'tried' },
      ])

      // A flood of refusals: the rate's worth, then the first refusal past it, then nothing more.
      const reason = 'x'.repeat(1000)
      for (let i = 0; i < LIMIT + 20; i++) {
        const answer = await graphql(gateway, STOP, { id: taskId('A', 'a-1'), reason }, as(KEYS.flood))
        expect(answer.errors?.[0]?.extensions?.code).toBe('FORBIDDEN')
      }
      expect((await audit(KEYS.operateA)).filter((row) => row.requestedBy === 'flood-A')).toHaveLength(LIMIT + 1)
    },
  )

  it('2. refuses text that is not well-formed UTF-16 before an action exists, in every argument', async () => {
    const before = messages()
    const cases = [
      { code: 'A', user: 'alice', text: 'x\uD800y', key: 'k' },
      { code: 'A', user: 'al\uDFFFice', text: 'hello', key: 'k2' },
      { code: 'A', user: 'alice', text: 'hello', from: 'f\uD800', key: 'k3' },
      { code: 'A', user: 'alice', text: 'hello', key: 'k\uD800' },
      { code: 'A', user: 'alice', text: 'hello', key: 'k\uDFFF' },
    ]
    for (const variables of cases) {
      for (let attempt = 0; attempt < 2; attempt++) {
        const answer = await graphql(gateway, MESSAGE, variables, as(KEYS.operateA))
        expect(answer.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT')
        expect(answer.errors?.[0]?.message).toMatch(/not well-formed Unicode/)
      }
    }
    expect(messages()).toBe(before)
    expect((await audit(KEYS.operateA)).filter((row) => row.state === 'PENDING')).toEqual([])
  })

  it(
    '3. answers every action a request sent, beside the ' + 'field that failed, alike over HTTP and graphql-ws',
    async () => {
      const three = `mutation {
      ok1: stopTask(id: "${taskId('A', 'a-2')}") { action { state } }
      ok2: stopTask(id: "${taskId('A', 'a-3')}") { action { state } }
      bad: stopTask(id: "${taskId('A', 'a-2')}", reason: "bad\\u0001") { action { state } }
    }`
      for (const send of [
        () => graphql(gateway, three, {}, as(KEYS.operateA)),
        () => overSocket(gateway.url, three, {}, KEYS.operateA),
      ]) {
        const before = cancels()
        const answer = await send()
        if ('status' in answer) expect(answer.status).toBe(200)
        expect(answer.data).toEqual({
          ok1: { action: { state: 'SUCCEEDED' } },
          ok2: { action: { state: 'SUCCEEDED' } },
          bad: null,
        })
        expect(answer.errors?.map((error) => error.extensions?.code)).toEqual(['BAD_USER_INPUT'])
        expect(cancels()).toBe(before + 2)
      }

      // One field past the rate: the 30 sent are in the answer, the 31st says RATE_LIMITED, and the
      // status is 200 (data came back), so a client does not retry what was done.
      const fields = Array.from(
        { length: LIMIT + 1 },
        (_, i) => `s${i}: stopTask(id: "${taskId('A', `a-${i}`)}") { action { state } }`,
      )
      const before = cancels()
      const many = await graphql(gateway, `mutation { ${fields.join('\n')} }`, {}, as(KEYS.many))
      expect(many.status).toBe(200)
      expect(Object.values(many.data as Record<string, unknown>).filter((value) => value !== null)).toHaveLength(LIMIT)
      expect((many.data as Record<string, unknown>)[`s${LIMIT}`]).toBeNull()
      expect(many.errors?.map((error) => error.extensions?.code)).toEqual(['RATE_LIMITED'])
      expect(cancels()).toBe(before + LIMIT)
      // Alone, the refused field still says 429: nothing was done.
      const alone = await graphql(gateway, STOP, { id: taskId('A', 'a-5') }, as(KEYS.many))
      expect(alone.status).toBe(429)
    },
  )

  it('4. refuses an idempotency key past 255 bytes of UTF-8 as bad input, before it spends a slot', async () => {
    const cjk = Array.from({ length: 1000 }, (_, i) => String.fromCodePoint(0x4e00 + ((i * 7919) % 20000))).join('')
    const before = (await audit(KEYS.operateA)).length
    const answer = await graphql(gateway, STOP, { id: taskId('A', 'a-6'), key: cjk }, as(KEYS.operateA))
    expect(answer.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT')
    expect(answer.errors?.[0]?.message).toMatch(/at most 255 bytes/)
    expect((await audit(KEYS.operateA)).length).toBe(before)
    // The same key with another reason is another request under a reused key.
    expect(
      (await graphql(gateway, STOP, { id: taskId('A', 'a-6'), key: 'reasoned', reason: 'first' }, as(KEYS.operateA)))
        .data.stopTask.action.state,
    ).toBe('SUCCEEDED')
    const other = await graphql(
      gateway,
      STOP,
      { id: taskId('A', 'a-6'), key: 'reasoned', reason: 'second' },
      as(KEYS.operateA),
    )
    expect(other.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT')
  })

  it('5. spends one slot for concurrent retries under one idempotency key', async () => {
    const before = cancels()
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        graphql(gateway, STOP, { id: taskId('A', 'a-7'), key: 'press-once' }, as(KEYS.race)),
      ),
    )
    const ids = new Set(answers.map((answer) => answer.data?.stopTask?.action.id))
    expect(ids.size).toBe(1)
    expect(cancels()).toBe(before + 1)
    // The other 29 slots of the minute are still there for real actions.
    for (let i = 0; i < LIMIT - 1; i++) {
      const answer = await graphql(gateway, STOP, { id: taskId('A', `a-${i}`) }, as(KEYS.race))
      expect(answer.errors).toBeUndefined()
    }
    expect(
      (await graphql(gateway, STOP, { id: taskId('A', 'a-8') }, as(KEYS.race))).errors?.[0]?.extensions?.code,
    ).toBe('RATE_LIMITED')
  })

  it('6. checks replay arguments at the edge, and records replays and switches in the audit', async () => {
    const far = await graphql(
      gateway,
      REPLAY,
      { endpoint: 'hooks-A', since: '0000-01-01T00:00:00Z' },
      as(KEYS.operateA),
    )
    expect(far.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT')
    const literal = await graphql(
      gateway,
      'mutation { redeliverWebhooks(endpoint: "hooks-A", since: "0000-01-01T00:00:00Z") }',
      {},
      as(KEYS.operateA),
    )
    // The DateTime scalar takes no year 0: a literal it refuses fails validation, as any other.
    expect(literal.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED')
    const nul = await graphql(gateway, REPLAY, { endpoint: 'hooks-A', ids: ['a\u0000'] }, as(KEYS.operateA))
    expect(nul.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT')
    const long = await graphql(gateway, REPLAY, { endpoint: 'n'.repeat(500_000) }, as(KEYS.operateA))
    expect(long.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT')
    expect(long.text.length).toBeLessThan(2000)

    const replayed = await graphql(
      gateway,
      REPLAY,
      { endpoint: 'hooks-A', since: '2000-01-01T00:00:00Z', reason: 'receiver was down' },
      as(KEYS.operateA),
    )
    expect(replayed.errors).toBeUndefined()
    expect(typeof replayed.data.redeliverWebhooks).toBe('number')
    // Off, an endpoint takes no replay (its rows would wait where retention never reaches).
    expect(
      (await graphql(gateway, SWITCH, { endpoint: 'hooks-A', on: false }, as(KEYS.operateA))).data
        .setWebhookEndpointEnabled.enabled,
    ).toBe(false)
    const whileOff = await graphql(
      gateway,
      REPLAY,
      { endpoint: 'hooks-A', since: '2000-01-01T00:00:00Z' },
      as(KEYS.operateA),
    )
    expect(whileOff.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT')
    expect(
      (await graphql(gateway, SWITCH, { endpoint: 'hooks-A', on: true }, as(KEYS.operateA))).data
        .setWebhookEndpointEnabled.enabled,
    ).toBe(true)
    // A read-only key's replay is refused, and recorded under A (it may see hooks-A), not under B.
    expect(
      (await graphql(gateway, REPLAY, { endpoint: 'hooks-A' }, as(KEYS.readA))).errors?.[0]?.extensions?.code,
    ).toBe('FORBIDDEN')
    expect(
      (await graphql(gateway, REPLAY, { endpoint: 'hooks-B' }, as(KEYS.readA))).errors?.[0]?.extensions?.code,
    ).toBe('FORBIDDEN')

    const rows = (await audit(KEYS.operateA)).filter((row) => row.endpoint !== null || row.kind !== 'STOP_TASK')
    expect(rows.filter((row) => row.kind !== 'SEND_MESSAGE')).toEqual([
      expect.objectContaining({
        kind: 'REPLAY_WEBHOOKS',
        requestedBy: 'read-A',
        refusal: 'FORBIDDEN',
        endpoint: 'hooks-A',
      }),
      expect.objectContaining({
        kind: 'ENABLE_WEBHOOK_ENDPOINT',
        requestedBy: 'operate-A',
        reason: 'maintenance',
        state: 'SUCCEEDED',
        endpoint: 'hooks-A',
      }),
      expect.objectContaining({
        kind: 'DISABLE_WEBHOOK_ENDPOINT',
        requestedBy: 'operate-A',
        reason: 'maintenance',
        state: 'SUCCEEDED',
        endpoint: 'hooks-A',
      }),
      expect.objectContaining({
        kind: 'REPLAY_WEBHOOKS',
        requestedBy: 'operate-A',
        reason: 'receiver was down',
        state: 'SUCCEEDED',
        endpoint: 'hooks-A',
      }),
    ])
    expect((await audit(KEYS.operateB)).filter((row) => row.endpoint !== null)).toEqual([])
  })
})
