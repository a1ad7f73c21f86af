import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { loadConfig, MEMORY_DATA_DIR } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { openDatabase } from '../../src/storage/database.client.js'
import { startTaskListServer, type TaskListServer } from '../../src/simulator/task-list.server.js'
import { EMPTY_TASK_LIST } from '../../src/simulator/task-list.snapshot.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { describeOnServer } from '../support/database.fixture.js'
import { SECRET, send, signFor } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'
import { type PrivateCluster, startPrivateCluster } from '../support/postgres.cluster.js'
import { type Bouncer, portOf, startBouncer, topologyAvailable } from '../support/postgres.topology.js'
import { subscribe } from '../support/subscription.client.js'

// Issue 44: `database.url` is PgBouncer in transaction mode, `database.directUrl` the primary. Over
// the pooler no statement may rely on a session: a LISTEN there would hear another client's
// notifications or none, and a named prepared statement would be missing on the next server
// connection. Two gateways share only the primary, as a team's instances do.

const OPERATOR = 'pooler-operator'
const TASKS = `query($code: String!) { tasks(filter: { serviceCode: $code }, first: 50) { totalCount
  edges { node { taskId userName } } } }`
const MESSAGE = `mutation($user: String!) { sendMessage(serviceCode: "TESTING", userName: $user, text: "hi",
  from: "ops") { action { kind state ret } } }`

const describeTopology = topologyAvailable() ? describeOnServer : (name: string) => it.skip(name, () => {})

describeTopology('two gateways through PgBouncer in transaction mode, with a direct URL for sessions', () => {
  let primary: PrivateCluster
  let bouncer: Bouncer
  let cloud: TaskListServer
  const gateways: Gateway[] = []

  beforeAll(async () => {
    primary = await startPrivateCluster()
    bouncer = await startBouncer(portOf(primary.url))
    cloud = await startTaskListServer({
      services: [{ serviceCode: 'TESTING', secret: SECRET }],
      source: () => EMPTY_TASK_LIST,
    })
    const config = loadConfig({
      env: { DATABASE_URL: bouncer.url, DATABASE_DIRECT_URL: primary.url },
      value: {
        port: 0,
        log: { level: 'silent' },
        services: [{ serviceCode: 'TESTING', secrets: [SECRET], baseUrl: cloud.url }],
        apiKeys: [{ name: 'operator', key: OPERATOR, serviceCodes: ['TESTING'], can: ['operate'] }],
        upstream: { pollIntervalMs: 0 },
      },
    })
    // One after the other: two in one process would race on the pages' compiled files (playground.plugin.ts).
    gateways.push(await startGateway(config))
    gateways.push(await startGateway(config))
  }, 120_000)

  afterAll(async () => {
    for (const gateway of gateways) await gateway.close().catch(() => {})
    await cloud?.close()
    await bouncer?.destroy()
    await primary?.destroy()
  })

  it('ingests on one, answers queries and a subscription on the other, and acts', { timeout: 120_000 }, async () => {
    const [a, b] = gateways as [Gateway, Gateway]
    expect(a.database.pooled).toBe(true)
    const taskId = `pooled-${Date.now()}`
    type Event = { notificationReceived: { taskId: string; fields: Record<string, string> } }
    const onB = subscribe<Event>(
      b.url,
      'subscription($t: String!) { notificationReceived(filter: { taskIds: [$t] }) { taskId fields } }',
      { t: taskId },
      { authorization: `Bearer ${OPERATOR}` },
    )
    try {
      let seq = 0
      const post = async () => {
        const fields = { ...sampleCallbacks(taskId).liveResume, seq: String(seq++) } as Record<string, string>
        return (await send(signFor(a, fields))).status
      }
      // Callbacks until the subscription on B is in place and hears one told by A.
      await expect
        .poll(
          async () => {
            expect(await post()).toBe(200)
            return onB.events.length
          },
          { timeout: 30_000, interval: 300 },
        )
        .toBeGreaterThan(0)
      const first = seq
      for (let i = 0; i < 20; i += 1) expect(await post()).toBe(200)
      const heardAfter = () =>
        onB.events.map((event) => Number(event.notificationReceived.fields.seq)).filter((told) => told >= first)
      await expect.poll(() => heardAfter().length, { timeout: 30_000 }).toBe(20)
      expect(new Set(heardAfter()).size).toBe(20)
      expect(onB.errors).toEqual([])
      await b.settle()
      // The same texts many times over: a pool that prepared them would miss them on another server connection.
      for (let i = 0; i < 10; i += 1) {
        for (const gateway of [a, b]) {
          const answer = await graphql(
            gateway,
            TASKS,
            { code: 'TESTING' },
            { headers: { authorization: `Bearer ${OPERATOR}` } },
          )
          expect(answer.errors).toBeUndefined()
          expect(answer.data.tasks.edges.map((edge: { node: { taskId: string } }) => edge.node.taskId)).toContain(
            taskId,
          )
        }
      }
      const acted = await graphql(a, MESSAGE, { user: 'bob' }, { headers: { authorization: `Bearer ${OPERATOR}` } })
      expect(acted.errors).toBeUndefined()
      expect(acted.data.sendMessage.action).toMatchObject({ kind: 'SEND_MESSAGE', ret: 0 })
    } finally {
      await onB.dispose()
    }
  })
  it('answers statements sent together on one pooled connection, with parameters and without', {
    timeout: 60_000,
  }, async () => {
    // postgres.js asks the types of a statement with parameters first (Parse, Describe, Flush), and
    // may send it right behind another statement's Sync: the pooler hands the server connection back
    // at that statement's ReadyForQuery, the describe's answer is dropped, and the connection hangs.
    // A pooler named by `directUrl` beside it, or by `?prepare=false` on the URL alone (as before it).
    for (const named of [{ url: bouncer.url, directUrl: primary.url }, { url: `${bouncer.url}?prepare=false` }]) {
      const database = await openDatabase({ ...named, dataDir: MEMORY_DATA_DIR, maxConnections: 1 })
      try {
        const answers = await Promise.all(
          Array.from({ length: 40 }, (_, i) =>
            database.db.execute(i % 2 === 0 ? sql`select 1 as n` : sql`select ${i}::int as n`),
          ),
        )
        expect(answers).toHaveLength(40)
      } finally {
        await database.close()
      }
    }
  })
})
