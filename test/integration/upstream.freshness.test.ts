import { ApolloClient, gql, HttpLink, InMemoryCache } from '@apollo/client'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { deliverTo, SECRET, TEST_CONFIG } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'
import { type FakeUpstream, startFakeUpstream } from '../support/upstream.server.js'
import { toGlobalId } from '../../src/adapters/graphql/global.id.js'

const ALL_KEY = 'key-all-9c2e'
const ALPHA_KEY = 'key-alpha-51d0'
const all = { headers: { authorization: `Bearer ${ALL_KEY}` } }
const alphaOnly = { headers: { authorization: `Bearer ${ALPHA_KEY}` } }

// ALPHA's task_list is a fake of the test's own; BRAVO's never connects (nothing listens on port 1).
describe(`reads never wait on the task_list; freshness is data (${driverName})`, () => {
  let db: TestDatabase
  let gateway: Gateway
  let alpha: FakeUpstream
  const alphaTask = `alpha-${Date.now()}`
  const bravoTask = `bravo-${Date.now()}`

  beforeAll(async () => {
    db = await openTestDatabase()
    alpha = await startFakeUpstream()
    // ALPHA's task is listed: each poll confirms it.
    alpha.answer({
      status: 200,
      body: JSON.stringify({ ret: 0, task_list: [{ id: alphaTask, service_code: 'ALPHA' }], user_list: [] }),
    })
    const config = loadConfig({
      env: {},
      value: {
        ...TEST_CONFIG,
        services: [
          { serviceCode: 'ALPHA', secrets: [SECRET], baseUrl: alpha.url },
          { serviceCode: 'BRAVO', secrets: [SECRET], baseUrl: 'http://127.0.0.1:1' },
        ],
        apiKeys: [
          { name: 'all', key: ALL_KEY, serviceCodes: ['*'] },
          { name: 'alpha', key: ALPHA_KEY, serviceCodes: ['ALPHA'] },
        ],
        // ALPHA is stale after 3 intervals and a timeout (6 s) without a success: never while it answers.
        upstream: { pollIntervalMs: 1000, maxBackoffMs: 1000, timeoutMs: 3000, retries: 0 },
      },
    })
    gateway = await startGateway(config, { database: db.database })
    for (const [taskId, code] of [
      [alphaTask, 'ALPHA'],
      [bravoTask, 'BRAVO'],
    ] as const) {
      expect((await deliverTo(gateway, sampleCallbacks(taskId, code).liveStart as Record<string, string>)).status).toBe(
        200,
      )
    }
    // Before anything is asked, BRAVO's upstream is known to be down and ALPHA's first poll is
    // stored: a refused connection fails at once, but ALPHA's answer is folded in a transaction,
    // which on a busy machine can take longer than BRAVO's failure and the first test together.
    const ready = async () => {
      const answer = await graphql(gateway, '{ upstreams { serviceCode lastSuccessAt lastError { kind } } }', {}, all)
      const [a, b] = answer.data?.upstreams ?? []
      if (a?.lastSuccessAt == null || b?.lastError?.kind !== 'NETWORK')
        throw new Error(`upstreams not polled yet: ${JSON.stringify(answer.data)}`)
    }
    await vi.waitFor(ready, { timeout: 60_000, interval: 50 })
  }, 300_000)

  afterAll(async () => {
    await gateway?.close()
    await alpha?.close()
    await db?.drop()
  })

  it(
    "@apollo/client at its defaults gets the first code's " + "tasks while the second code's upstream is down",
    async () => {
      const client = new ApolloClient({
        link: new HttpLink({ uri: `${gateway.url}/graphql`, headers: all.headers }),
        cache: new InMemoryCache(),
      })
      const ofAlpha = await client.query<any>({
        query: gql`query AlphaTasks { tasks(filter: { serviceCode: "ALPHA" }) { totalCount edges { node { id taskId
          serviceCode } } } }`,
      })
      expect(ofAlpha.data?.tasks.edges.map((edge: { node: { taskId: string } }) => edge.node.taskId)).toEqual([
        alphaTask,
      ])
      // Every code's tasks, BRAVO's stale ones included: still data, nothing thrown.
      const everything = await client.query<any>({ query: gql`query AllTasks { tasks { totalCount } }` })
      expect(everything.data?.tasks.totalCount).toBe(2)
    },
  )

  it('says which of the codes it read are stale in extensions, never in errors', async () => {
    const answer = await graphql(gateway, '{ tasks { totalCount } }', {}, all)
    expect(answer.errors, answer.text).toBeUndefined()
    expect(answer.data.tasks.totalCount).toBe(2)
    expect(answer.extensions).toEqual({
      upstream: { stale: [{ serviceCode: 'BRAVO', lastSuccessAt: null, consecutiveFailures: expect.any(Number) }] },
    })
    // A read of ALPHA alone does not speak of BRAVO.
    const ofAlpha = await graphql(gateway, '{ tasks(filter: { serviceCode: "ALPHA" }) { totalCount } }', {}, all)
    expect(ofAlpha.extensions).toBeUndefined()
    const bravo = await graphql(
      gateway,
      `query($id: ID!) { task(id: $id) { taskId serviceCode confirmedAt } }`,
      { id: toGlobalId('Task', 'BRAVO', bravoTask) },
      all,
    )
    expect(bravo.data.task).toEqual({ taskId: bravoTask, serviceCode: 'BRAVO', confirmedAt: null })
    expect(bravo.extensions).toMatchObject({ upstream: { stale: [{ serviceCode: 'BRAVO' }] } })
  })

  it('lists every code the caller may see with its freshness', async () => {
    const answer = await graphql(
      gateway,
      '{ upstreams { serviceCode configured healthy stale consecutiveFailures lastSuccessAt lastError { kind ret ' +
        'message } } }',
      {},
      all,
    )
    expect(answer.errors, answer.text).toBeUndefined()
    const [a, b] = answer.data.upstreams
    expect(a).toMatchObject({
      serviceCode: 'ALPHA',
      configured: true,
      healthy: true,
      stale: false,
      consecutiveFailures: 0,
      lastSuccessAt: expect.any(String),
    })
    expect(b).toMatchObject({
      serviceCode: 'BRAVO',
      configured: true,
      healthy: false,
      stale: true,
      lastSuccessAt: null,
      lastError: { kind: 'NETWORK', ret: null },
    })
    expect(b.consecutiveFailures).toBeGreaterThan(0)
    const task = await graphql(
      gateway,
      `query($id: ID!) { task(id: $id) { listed confirmedAt } }`,
      { id: toGlobalId('Task', 'ALPHA', alphaTask) },
      all,
    )
    expect(task.data.task.listed).toBe(true)
    expect(Date.parse(task.data.task.confirmedAt)).toBeGreaterThan(Date.parse(a.lastSuccessAt) - 60_000)
  })

  it("a key for one code never sees another code's name or status, extensions included", async () => {
    const queries = [
      '{ tasks { totalCount edges { node { id serviceCode } } } }',
      '{ users { totalCount edges { node { serviceCode userName } } } }',
      '{ upstreams { serviceCode stale lastError { kind } } }',
      `{ task(id: "${toGlobalId('Task', 'BRAVO', bravoTask)}") { id } }`,
    ]
    for (const query of queries) {
      const answer = await graphql(gateway, query, {}, alphaOnly)
      expect(answer.errors, answer.text).toBeUndefined()
      expect(answer.text).not.toContain('BRAVO')
    }
    const upstreams = await graphql(gateway, '{ upstreams { serviceCode } }', {}, alphaOnly)
    expect(upstreams.data.upstreams).toEqual([{ serviceCode: 'ALPHA' }])
    // Asked by name, BRAVO reads as a code livegate knows nothing of.
    const asked = await graphql(
      gateway,
      '{ upstream(serviceCode: "BRAVO") { configured healthy stale consecutiveFailures lastPollAt lastError { ' +
        'kind } } }',
      {},
      alphaOnly,
    )
    expect(asked.data.upstream).toEqual({
      configured: false,
      healthy: false,
      stale: false,
      consecutiveFailures: 0,
      lastPollAt: null,
      lastError: null,
    })
    expect(asked.extensions).toBeUndefined()
  })

  it('answers tasks, task and users from stored state while a ' +
    'task_list request hangs, and reports the failure', async () => {
    alpha.answer('never')
    await expect.poll(() => alpha.pending(), { timeout: 10_000 }).toBeGreaterThan(0)
    const hanging = alpha.pending()
    const answers = await Promise.all([
      graphql(gateway, '{ tasks(filter: { serviceCode: "ALPHA" }) { edges { node { taskId } } } }', {}, alphaOnly),
      graphql(
        gateway,
        `query($id: ID!) { task(id: $id) { taskId status } }`,
        { id: toGlobalId('Task', 'ALPHA', alphaTask) },
        alphaOnly,
      ),
      graphql(gateway, '{ users(filter: { serviceCode: "ALPHA" }) { edges { node { userName } } } }', {}, alphaOnly),
    ])
    // Every answer came while the request it would once have waited for was still open.
    expect(alpha.pending()).toBeGreaterThanOrEqual(hanging)
    for (const answer of answers) expect(answer.errors, answer.text).toBeUndefined()
    expect(answers[0]?.data.tasks.edges).toEqual([{ node: { taskId: alphaTask } }])
    expect(answers[1]?.data.task).toEqual({ taskId: alphaTask, status: 'LIVE' })
    expect(answers[2]?.data.users.edges).toEqual([{ node: { userName: 'alice' } }])

    const status = async () =>
      (
        await graphql(
          gateway,
          '{ upstreams { serviceCode healthy stale consecutiveFailures lastError { kind } } }',
          {},
          alphaOnly,
        )
      ).data.upstreams[0]
    await expect.poll(async () => (await status()).lastError?.kind, { timeout: 20_000 }).toBe('TIMEOUT')
    expect(await status()).toMatchObject({
      serviceCode: 'ALPHA',
      healthy: false,
      consecutiveFailures: expect.any(Number),
    })
    await expect.poll(async () => (await status()).stale, { timeout: 20_000 }).toBe(true)
    const stale = await graphql(gateway, '{ tasks { totalCount } }', {}, alphaOnly)
    expect(stale.errors).toBeUndefined()
    expect(stale.extensions).toMatchObject({
      upstream: { stale: [{ serviceCode: 'ALPHA', lastSuccessAt: expect.any(String) }] },
    })
    expect(stale.text).not.toContain('BRAVO')
  }, 300_000)
})
