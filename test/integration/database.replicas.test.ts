import { afterAll, beforeAll, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { startTaskListServer, type TaskListServer } from '../../src/simulator/task-list.server.js'
import { EMPTY_TASK_LIST } from '../../src/simulator/task-list.snapshot.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { describeOnServer } from '../support/database.fixture.js'
import { SECRET, send, signFor } from '../support/gateway.fixture.js'
import { walLocation } from '../../src/fold/replica.choice.js'
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

const PAGE = `query($t: String!, $a: String) { notifications(filter: { taskIds: [$t] }, first: 2, after: $a) {
  totalCount edges { node { fields } } pageInfo { endCursor } } }`
type Connection = {
  totalCount: number
  edges: Array<{ node: { fields: { seq: string } } }>
  pageInfo: { endCursor: string }
}
/** The seqs of a page, in its order. */
const seqsOf = (connection: Connection | undefined) => (connection?.edges ?? []).map((edge) => edge.node.fields.seq)

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

  it('every answer names its position; the next page naming it is never read from a replica behind it', async () => {
    const taskId = `paged-${Date.now()}`
    const postSeq = async (seq: number) => {
      const fields = { ...sampleCallbacks(taskId).liveResume, seq: String(seq) } as Record<string, string>
      expect((await send(signFor(gateway, fields))).status).toBe(200)
    }
    type Page = { data?: { notifications: Connection }; extensions?: Record<string, unknown> }
    const page = async (after: string | null, readAfter?: string) =>
      (await (
        await fetch(`${gateway.url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...auth.headers },
          body: JSON.stringify({
            query: PAGE,
            variables: { t: taskId, a: after },
            ...(readAfter ? { extensions: { readAfter } } : {}),
          }),
        })
      ).json()) as Page
    for (let seq = 0; seq < 3; seq += 1) await postSeq(seq)
    await gateway.settle()
    // Read on the replica once it has replayed them: the answer names the replica's own position.
    await expect
      .poll(
        async () => {
          const first = await page(null)
          return first.data?.notifications.totalCount === 3 && first.extensions?.readFrom
        },
        { timeout: 30_000 },
      )
      .toBe('replica')
    expect((await page(null)).extensions?.position).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/)
    await replica.pause()
    try {
      for (let seq = 3; seq < 6; seq += 1) await postSeq(seq)
      await gateway.settle()
      const acted = await graphql(gateway, MESSAGE, { user: 'dave' }, auth)
      // The first page, read where the write is: its answer names a position at or past the write's.
      const first = await page(null, acted.extensions?.position as string)
      expect(first.extensions?.readFrom).toBe('primary')
      expect(first.data?.notifications.totalCount).toBe(6)
      const position = first.extensions?.position as string
      expect(walLocation(position)).toBeGreaterThanOrEqual(walLocation(acted.extensions?.position as string) as bigint)
      const cursor = first.data?.notifications.pageInfo.endCursor as string
      // The paused replica has not replayed it: every next page naming it is read on the primary, whole.
      // Newest first: the first page holds 5 and 4, the next 3 (written after the pause) and 2.
      expect(seqsOf(first.data?.notifications)).toEqual(['5', '4'])
      const expected = ['3', '2']
      for (let i = 0; i < 10; i += 1) {
        const next = await page(cursor, position)
        expect(next.extensions?.readFrom).toBe('primary')
        expect(seqsOf(next.data?.notifications)).toEqual(expected)
      }
      await replica.resume()
      // Once it has replayed past the position, the replica may serve that page, and answers the same.
      await expect
        .poll(async () => (await page(cursor, position)).extensions?.readFrom, { timeout: 30_000 })
        .toBe('replica')
      expect(seqsOf((await page(cursor, position)).data?.notifications)).toEqual(expected)
    } finally {
      await replica.resume()
    }
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
