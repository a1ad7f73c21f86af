import { afterAll, beforeAll, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { startTaskListServer, type TaskListServer } from '../../src/simulator/task-list.server.js'
import { EMPTY_TASK_LIST } from '../../src/simulator/task-list.snapshot.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { describeOnServer } from '../support/database.fixture.js'
import { SECRET, send, signFor } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'
import { metricValue, scrapeMetrics } from '../support/metrics.scrape.js'
import { type PrivateCluster, startPrivateCluster } from '../support/postgres.cluster.js'
import { type Replica, startReplica, topologyAvailable } from '../support/postgres.topology.js'

// Issue 44: queries read from a real streaming replica (pg_basebackup -R) while it keeps up; a
// mutation and what it answers stay on the primary, and a query naming the mutation's position is
// never answered from a replica that has not replayed it. Faults are real: the replica's replay
// paused (pg_wal_replay_pause), then the replica stopped.

const KEY = 'replicas-operator'
const auth = { headers: { authorization: `Bearer ${KEY}` } }
const TASK = `query($code: String!, $t: String!) { tasks(filter: { serviceCode: $code, taskIds: [$t] }) {
  edges { node { taskId } } } }`
const MESSAGE = `mutation($user: String!) { sendMessage(serviceCode: "TESTING", userName: $user, text: "hi",
  from: "ops") { action { kind ret } } }`

const describeTopology = topologyAvailable() ? describeOnServer : (name: string) => it.skip(name, () => {})

describeTopology('reads from a streaming replica, never older than what the client saw', () => {
  let primary: PrivateCluster
  let replica: Replica
  let cloud: TaskListServer
  let gateway: Gateway

  beforeAll(async () => {
    primary = await startPrivateCluster()
    replica = await startReplica(primary.url)
    cloud = await startTaskListServer({
      services: [{ serviceCode: 'TESTING', secret: SECRET }],
      source: () => EMPTY_TASK_LIST,
    })
    const config = loadConfig({
      env: { DATABASE_URL: primary.url, DATABASE_READ_URLS: replica.url },
      value: {
        port: 0,
        log: { level: 'silent' },
        database: { maxReplicaLagMs: 1000 },
        services: [{ serviceCode: 'TESTING', secrets: [SECRET], baseUrl: cloud.url }],
        apiKeys: [{ name: 'operator', key: KEY, serviceCodes: ['TESTING'], can: ['operate'] }],
        upstream: { pollIntervalMs: 0 },
      },
    })
    gateway = await startGateway(config)
  }, 120_000)

  afterAll(async () => {
    await gateway?.close().catch(() => {})
    await cloud?.close()
    await replica?.destroy()
    await primary?.destroy()
  })

  const post = async (taskId: string) => {
    const fields = { ...sampleCallbacks(taskId).liveResume, seq: '1' } as Record<string, string>
    expect((await send(signFor(gateway, fields))).status).toBe(200)
    await gateway.settle()
  }
  type Answer = { data?: { tasks: { edges: unknown[] } }; extensions?: Record<string, unknown> }
  // A query with the request's `extensions` (where a client names the position it saw: `readAfter`).
  const ask = async (taskId: string, extensions?: Record<string, unknown>): Promise<Answer> => {
    const response = await fetch(`${gateway.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth.headers },
      body: JSON.stringify({
        query: TASK,
        variables: { code: 'TESTING', t: taskId },
        ...(extensions ? { extensions } : {}),
      }),
    })
    return (await response.json()) as Answer
  }
  const seen = (answer: Answer) => answer.data?.tasks.edges.length === 1

  it('answers queries from the replica, says so, and a mutation from the primary with its position', async () => {
    const taskId = `replica-${Date.now()}`
    await post(taskId)
    // The replica replays the task within its lag: the query is answered there, and says how far behind.
    await expect
      .poll(
        async () => {
          const answer = await ask(taskId)
          return seen(answer) && answer.extensions?.readFrom
        },
        { timeout: 30_000 },
      )
      .toBe('replica')
    const answer = await ask(taskId)
    expect(answer.extensions).toMatchObject({ readFrom: 'replica', lagMs: expect.any(Number) })
    const acted = await graphql(gateway, MESSAGE, { user: 'bob' }, auth)
    expect(acted.errors).toBeUndefined()
    expect(acted.extensions).toMatchObject({
      readFrom: 'primary',
      lagMs: 0,
      position: expect.stringMatching(/^[0-9A-F]+\/[0-9A-F]+$/),
    })
    const metrics = await scrapeMetrics(gateway.url)
    expect(metricValue(metrics, 'livegate_db_reads_total', { target: 'replica' })).toBeGreaterThan(0)
    expect(metricValue(metrics, 'livegate_db_reads_total', { target: 'primary' })).toBeGreaterThan(0)
    expect(metricValue(metrics, 'livegate_db_replica_lag_ms', {})).toBeGreaterThanOrEqual(0)
    const ready = (await (await fetch(`${gateway.url}/readyz`)).json()) as { ready: boolean; replicas: unknown[] }
    expect(ready.ready).toBe(true)
    expect(ready.replicas).toEqual([expect.objectContaining({ state: 'serving' })])
  }, 120_000)

  it('paused, the replica serves nothing older than the position named; stopped, reads go on', async () => {
    await replica.pause()
    try {
      const taskId = `paused-${Date.now()}`
      await post(taskId)
      // The write the client was answered: its position, named by every read that follows.
      const acted = await graphql(gateway, MESSAGE, { user: 'carol' }, auth)
      const position = acted.extensions?.position as string
      expect(position).toMatch(/\//)
      for (let i = 0; i < 20; i += 1) {
        const answer = await ask(taskId, { readAfter: position })
        expect(seen(answer)).toBe(true)
        expect(answer.extensions?.readFrom).toBe('primary')
      }
      // Unnamed reads leave the replica once its lag passes maxReplicaLagMs.
      await expect.poll(async () => (await ask(taskId)).extensions?.readFrom, { timeout: 30_000 }).toBe('primary')
      const ready = (await (await fetch(`${gateway.url}/readyz`)).json()) as { replicas: Array<{ state: string }> }
      expect(ready.replicas[0]?.state).toBe('lagging')
    } finally {
      await replica.resume()
    }
    await replica.stop()
    const taskId = `stopped-${Date.now()}`
    await post(taskId)
    await expect
      .poll(
        async () => {
          const answer = await ask(taskId)
          return seen(answer) && answer.extensions?.readFrom
        },
        { timeout: 30_000 },
      )
      .toBe('primary')
    await expect
      .poll(
        async () =>
          ((await (await fetch(`${gateway.url}/readyz`)).json()) as { replicas: Array<{ state: string }> }).replicas[0]
            ?.state,
        { timeout: 30_000 },
      )
      .toBe('down')
  }, 180_000)
})
