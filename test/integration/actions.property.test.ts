import { sql } from 'drizzle-orm'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { emptyTaskState } from '../../src/fold/task.fold.js'
import { startTaskListServer, type TaskListServer } from '../../src/simulator/task-list.server.js'
import { EMPTY_TASK_LIST } from '../../src/simulator/task-list.snapshot.js'
import { resultRows } from '../../src/storage/database.client.js'
import { writeChanges } from '../../src/storage/graph/graph.statements.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { startTestGateway, type TestGateway } from '../support/gateway.mode.js'
import { graphql } from '../support/graphql.client.js'
import { overSocket } from '../support/socket.execute.js'
import { type Receiver, startReceiver, WEBHOOK_SECRET } from '../support/receiver.process.js'

// Random strings in every argument of every acting mutation, over HTTP and graphql-ws, from a key
// that operates and one that only reads, both of tenant A. Whatever is sent: no internal error, no
// action left PENDING, no row outside A, and no more cloud calls than actions answered.
const SECRET = 'abc'
const KEYS = { operate: 'prop-op-a', read: 'prop-read-a' }
const TASK = Buffer.from(`Task:${JSON.stringify(['A', 'a-1'])}`).toString('base64url')

// Any UTF-16 code unit (lone surrogates included), any code point of any plane, the characters
// that break signatures and statements, and strings far past every limit.
const anyUnit = fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code))
const text = fc.oneof(
  fc.string({ unit: anyUnit, maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '',
    ' ',
    'ok',
    'a\u0000b',
    'x\uD800y',
    '\uDFFF',
    'line\nbreak',
    '\u2028',
    'é',
    '😀',
    'A',
    'hooks-A',
    TASK,
  ),
  fc.string({ unit: 'binary', minLength: 990, maxLength: 1100 }),
  fc.string({ unit: fc.constantFrom('中', '😀', 'é'), minLength: 80, maxLength: 1200 }),
)
const maybe = <T>(value: fc.Arbitrary<T>) => fc.option(value, { nil: undefined })
const time = fc.oneof(
  fc.constantFrom(
    '0000-01-01T00:00:00Z',
    '9999-12-31T23:59:59Z',
    '+275760-09-13T00:00:00Z',
    '1969-12-31T23:59:59Z',
    'not a time',
  ),
  fc.date({ noInvalidDate: true }).map((date) => date.toISOString()),
)

const calls = fc.oneof(
  fc.record({
    query: fc.constant(
      `mutation($id: ID!, $r: String, $k: String) { stopTask(id: $id, reason: $r, idempotencyKey: $k) { action { ` +
        `id } } }`,
    ),
    variables: fc.record({ id: fc.oneof(text, fc.constant(TASK)), r: maybe(text), k: maybe(text) }),
  }),
  fc.record({
    query: fc.constant(
      `mutation($c: String!, $u: String!, $t: String!, $f: String, $k: String) { sendMessage(serviceCode: $c, ` +
        `userName: $u, text: $t, from: $f, idempotencyKey: $k) { action { id } } }`,
    ),
    variables: fc.record({ c: fc.oneof(text, fc.constant('A')), u: text, t: text, f: maybe(text), k: maybe(text) }),
  }),
  fc.record({
    query: fc.constant(
      `mutation($e: String!, $ids: [ID!], $s: DateTime, $r: String) { redeliverWebhooks(endpoint: $e, eventIds: ` +
        `$ids, since: $s, reason: $r) }`,
    ),
    variables: fc.record({
      e: fc.oneof(text, fc.constant('hooks-A')),
      ids: maybe(fc.array(text, { maxLength: 4 })),
      s: maybe(time),
      r: maybe(text),
    }),
  }),
  fc.record({
    query: fc.constant(
      `mutation($e: String!, $on: Boolean!, $r: String) { setWebhookEndpointEnabled(endpoint: $e, enabled: $on, ` +
        `reason: $r) { name } }`,
    ),
    variables: fc.record({ e: fc.oneof(text, fc.constant('hooks-A')), on: fc.constant(true), r: maybe(text) }),
  }),
)

describe(`random input on every acting argument (${driverName})`, { timeout: 300_000 }, () => {
  let db: TestDatabase
  let gateway: TestGateway
  let cloud: TaskListServer
  let receiver: Receiver

  beforeAll(async () => {
    cloud = await startTaskListServer({
      services: [{ serviceCode: 'A', secret: SECRET }],
      source: () => EMPTY_TASK_LIST,
    })
    receiver = await startReceiver()
    db = await openTestDatabase()
    gateway = await startTestGateway(
      {
        port: 0,
        log: { level: 'silent' },
        services: [{ serviceCode: 'A', secrets: [SECRET], baseUrl: cloud.url }],
        apiKeys: [
          { name: 'operate-A', key: KEYS.operate, serviceCodes: ['A'], can: ['operate'] },
          { name: 'read-A', key: KEYS.read, serviceCodes: ['A'] },
        ],
        upstream: { pollIntervalMs: 0 },
        limits: { actionsPerMinute: 10_000 },
        webhooks: {
          endpoints: [
            {
              name: 'hooks-A',
              url: `${receiver.url}/hooks/a`,
              secret: WEBHOOK_SECRET,
              serviceCodes: ['A'],
              events: ['action.succeeded'],
            },
          ],
        },
      },
      db,
    )
    await writeChanges(gateway.database.db, { tasks: [emptyTaskState('A', 'a-1')], users: [] }, new Date())
  })

  afterAll(async () => {
    await gateway?.close()
    await cloud?.close()
    await receiver?.stop()
    await db?.drop()
  })

  it(
    'never answers an internal error, leaves nothing PENDING, writes nothing outside A, calls the cloud no more ' +
      'than it answers',
    async () => {
      let answered = 0
      await fc.assert(
        fc.asyncProperty(calls, fc.constantFrom(KEYS.operate, KEYS.read), fc.boolean(), async (call, key, socket) => {
          const answer = socket
            ? await overSocket(gateway.url, call.query, call.variables, key)
            : await graphql(gateway, call.query, call.variables, { headers: { authorization: `Bearer ${key}` } })
          if ('status' in answer) expect(answer.status).toBeLessThan(500)
          const codes = (answer.errors ?? []).map((error) => error.extensions?.code)
          expect(codes).not.toContain('INTERNAL_SERVER_ERROR')
          const data = answer.data as Record<string, { action?: { id: string } } | null> | null | undefined
          if (data?.stopTask?.action || data?.sendMessage?.action) answered++
        }),
        { numRuns: 150, seed: 32 },
      )
      const list = resultRows<{ service_code: string; state: string }>(
        await gateway.database.db.execute(sql`select service_code, state from actions`),
      )
      expect(list.filter((row) => row.state === 'PENDING')).toEqual([])
      expect(new Set(list.map((row) => row.service_code))).toEqual(new Set(list.length > 0 ? ['A'] : []))
      // The simulated cloud is reachable, so nothing is retried: one call per action answered at most.
      expect(cloud.actions.length).toBeLessThanOrEqual(answered)
    },
  )
})
