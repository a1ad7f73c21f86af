import { createServer } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { tasks } from '../../src/storage/tables/graph.table.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import type { Scenario } from '../../src/simulator/scenario.model.js'
import { type Simulator, startSimulator } from '../../src/simulator/simulator.run.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { SECRET, TEST_CONFIG } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'

const TASK_FIELDS = `
  id taskId serviceCode vsId userName status endReason listed startedAt endedAt liveOnly opaque
  user { id serviceCode userName }
  outputs { id index tag format { container containerName videoCodec audioCodec } playUrl timeShiftUrl connections
    httpOutputBytes
    streams { index kind codecId width height copyMode bitRate } recordings { fileName } task { id } }
  recordings { outputIndex fileName playUrl }
  resumes { status sentAt }
  notifications(first: 5) { totalCount edges { cursor node { __typename id type } } }`

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const address = probe.address()
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0))
    })
  })

describe(`the graph over GraphQL, fed by the simulator (${driverName})`, () => {
  let db: TestDatabase
  let gateway: Gateway
  let simulator: Simulator
  let scenario: Scenario

  beforeAll(async () => {
    db = await openTestDatabase()
    const simulatorPort = await freePort()
    const config = loadConfig({
      env: {},
      value: {
        ...TEST_CONFIG,
        services: [{ serviceCode: 'TESTING', secrets: [SECRET], baseUrl: `http://127.0.0.1:${simulatorPort}` }],
        // A short poll so the graph sees each task listed while it lives (vanishing needs that); the
        // polls before the simulator listens fail, and must not back off past the first sessions.
        upstream: { pollIntervalMs: 25, maxBackoffMs: 100, timeoutMs: 10_000, retries: 0 },
      },
    })
    gateway = await startGateway(config, { database: db.database })
    simulator = await startSimulator({
      port: simulatorPort,
      services: [{ serviceCode: 'TESTING', secret: SECRET }],
      gatewayUrl: gateway.url,
      seed: 11,
      sessions: 6,
      rate: 60,
      audience: false,
    })
    await simulator.done
    await gateway.settle()
    scenario = simulator.scenario()
    // Until a poll after the last session left the task list has been folded in (vanishing needs it).
    const deadline = Date.now() + 120_000
    while (Date.now() < deadline) {
      const answer = await graphql(gateway, '{ tasks(filter: { status: [LIVE, WAITING_RECONNECT] }) { totalCount } }')
      if (answer.data?.tasks.totalCount === 0) break
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }, 300_000)

  afterAll(async () => {
    await simulator?.stop()
    await gateway?.close()
    await db?.drop()
  })

  it("folds every session into a task whose status and end reason are the session's", async () => {
    const answer = await graphql(gateway, `{ tasks(first: 50) { totalCount edges { node { ${TASK_FIELDS} } } } }`)
    expect(answer.errors, answer.text).toBeUndefined()
    const nodes = answer.data.tasks.edges.map((edge: { node: { taskId: string } }) => edge.node)
    expect(answer.data.tasks.totalCount).toBe(scenario.sessions.length)
    const stored = await db.database.db.select({ state: tasks.state }).from(tasks)
    const sightedTasks = new Set(
      stored.filter(({ state }) => state.sighting.task !== null).map(({ state }) => state.taskId),
    )
    // The vanished sessions were seen listed by definition, so some streams are always checked.
    expect(sightedTasks.size).toBeGreaterThan(0)
    for (const session of scenario.sessions) {
      const task = nodes.find((node: { taskId: string }) => node.taskId === session.taskId)
      expect(task, session.taskId).toMatchObject({
        serviceCode: 'TESTING',
        vsId: session.vsId,
        userName: session.author,
        status: 'ENDED',
        endReason: session.ending,
        listed: false,
      })
      expect(task.user).toMatchObject({ serviceCode: 'TESTING', userName: session.author })
      expect(task.outputs.every((o: { task: { id: string } }) => o.task.id === task.id)).toBe(true)
      expect(new Set(task.outputs.map((o: { id: string }) => o.id)).size).toBe(task.outputs.length)
      for (const stream of task.outputs.flatMap(
        (o: { streams: Array<{ kind: string; width: number | null }> }) => o.streams,
      )) {
        expect(stream.kind).not.toBeNull()
        if (stream.kind === 'AUDIO') expect(stream.width).toBeNull()
      }
      expect(task.startedAt).toBe(new Date(session.createdAt * 1000).toISOString())
      expect(task.outputs.map((o: { tag: string }) => o.tag).sort()).toEqual(session.outputs.map((o) => o.tag).sort())
      // Streams come from the task list: every task a poll saw listed has them, and one no poll
      // caught alive (a short session on a busy machine) has none.
      const seenListed = sightedTasks.has(session.taskId)
      expect(
        task.outputs.every((o: { streams: unknown[] }) =>
          seenListed ? o.streams.length >= 2 : o.streams.length === 0,
        ),
        `${session.taskId} listed: ${seenListed}`,
      ).toBe(true)
      const flv = task.outputs.find(
        (o: { format: { container: string; containerName: string } }) =>
          o.format.container === 'FLV' && o.format.containerName === 'flv',
      )
      if (session.outputs.some((o) => o.format.startsWith('flv'))) expect(flv?.timeShiftUrl).toContain('flv')
      expect(task.recordings).toHaveLength(
        session.liveOnly || session.ending === 'VANISHED' ? 0 : task.recordings.length,
      )
      expect(task.notifications.edges.length).toBeLessThanOrEqual(5)
      expect(task.notifications.totalCount).toBe(
        scenario.callbacks.filter((c) => c.fields.hashed_id === session.taskId).length,
      )
    }
    // Newest start first.
    const starts = nodes.map((node: { startedAt: string }) => node.startedAt)
    expect([...starts].sort().reverse()).toEqual(starts)
  })

  it('filters by status, user, service code, server and start time, and counts what matches', async () => {
    const query =
      `query($filter: TaskFilter) { tasks(filter: $filter) { totalCount edges { node { id taskId userName ` +
      `endReason startedAt } } } }`
    const taskIdsOf = (answer: { data?: any }) =>
      answer.data.tasks.edges.map((e: { node: { taskId: string } }) => e.node.taskId).sort()
    const vanished = scenario.sessions.filter((s) => s.ending === 'VANISHED')
    expect(vanished.length).toBeGreaterThan(0)
    const ended = await graphql(gateway, query, { filter: { status: ['ENDED'] } })
    expect(ended.data.tasks.totalCount).toBe(scenario.sessions.length)
    expect(
      (await graphql(gateway, query, { filter: { status: ['LIVE', 'WAITING_RECONNECT'] } })).data.tasks.totalCount,
    ).toBe(0)

    // userName is what a search box expects: a prefix, A-Z case-insensitive.
    const author = scenario.sessions[0]!.author
    const prefix = author.slice(0, 2).toUpperCase()
    const byPrefix = await graphql(gateway, query, { filter: { userName: prefix } })
    expect(byPrefix.errors, byPrefix.text).toBeUndefined()
    expect(taskIdsOf(byPrefix)).toEqual(
      scenario.sessions
        .filter((s) => s.author.toLowerCase().startsWith(prefix.toLowerCase()))
        .map((s) => s.taskId)
        .sort(),
    )
    expect((await graphql(gateway, query, { filter: { userName: `${author}%` } })).data.tasks.totalCount).toBe(0)
    expect((await graphql(gateway, query, { filter: { serviceCode: 'NOBODY' } })).data.tasks.totalCount).toBe(0)

    // userIds is exact: one user's tasks, as User.tasks lists them.
    const ownTasks = scenario.sessions
      .filter((s) => s.author === author)
      .map((s) => s.taskId)
      .sort()
    const user = await graphql(
      gateway,
      `query($name: String) { users(filter: { userName: $name }) { edges { node { id userName tasks(first: 50) { ` +
        `totalCount edges { node { taskId user { userName } } } } } } } }`,
      { name: author },
    )
    expect(user.errors, user.text).toBeUndefined()
    const owner = user.data.users.edges.find((e: { node: { userName: string } }) => e.node.userName === author).node
    expect(owner.tasks.totalCount).toBe(ownTasks.length)
    expect(owner.tasks.edges.map((e: { node: { taskId: string } }) => e.node.taskId).sort()).toEqual(ownTasks)
    expect(
      owner.tasks.edges.every((e: { node: { user: { userName: string } } }) => e.node.user.userName === author),
    ).toBe(true)
    expect(taskIdsOf(await graphql(gateway, query, { filter: { userIds: [owner.id] } }))).toEqual(ownTasks)

    const vsId = scenario.sessions[0]!.vsId
    expect(taskIdsOf(await graphql(gateway, query, { filter: { vsId } }))).toEqual(
      scenario.sessions
        .filter((s) => s.vsId === vsId)
        .map((s) => s.taskId)
        .sort(),
    )
    const two = scenario.sessions
      .slice(0, 2)
      .map((s) => s.taskId)
      .sort()
    expect(taskIdsOf(await graphql(gateway, query, { filter: { taskIds: two } }))).toEqual(two)
    expect((await graphql(gateway, query, { filter: { taskIds: [] } })).data.tasks.totalCount).toBe(0)

    const times = scenario.sessions.map((s) => s.createdAt * 1000).sort((a, b) => a - b)
    const from = new Date(times[1]!).toISOString()
    const byTime = await graphql(gateway, query, { filter: { startedFrom: from } })
    expect(byTime.data.tasks.totalCount).toBe(times.filter((t) => t >= times[1]!).length)
  })

  it('pages through tasks with no duplicate and no gap', async () => {
    const seen: string[] = []
    let after: string | null = null
    for (let page = 0; page < 10; page++) {
      const answer: Awaited<ReturnType<typeof graphql<any>>> = await graphql(
        gateway,
        `query($after: String) { tasks(first: 2, after: $after) { edges { node { id } } pageInfo { hasNextPage ` +
          `endCursor } } }`,
        { after },
      )
      expect(answer.errors, answer.text).toBeUndefined()
      seen.push(...answer.data.tasks.edges.map((e: { node: { id: string } }) => e.node.id))
      if (!answer.data.tasks.pageInfo.hasNextPage) break
      after = answer.data.tasks.pageInfo.endCursor
    }
    expect(seen).toHaveLength(scenario.sessions.length)
    expect(new Set(seen).size).toBe(seen.length)
  })

  it('finds one task by its global id, answers null for an unknown one, and refuses what is no id', async () => {
    const taskId = scenario.sessions[0]!.taskId
    const listed = await graphql(
      gateway,
      `query($taskIds: [String!]) { tasks(filter: { taskIds: $taskIds }) { edges { node { id } } } }`,
      { taskIds: [taskId] },
    )
    const id = listed.data.tasks.edges[0].node.id as string
    const unknown = Buffer.from('Task:["TESTING","nope"]').toString('base64url')
    const answer = await graphql(
      gateway,
      `query($id: ID!, $unknown: ID!) { task(id: $id) { id taskId status } missing: task(id: $unknown) { id } }`,
      { id, unknown },
    )
    expect(answer.errors, answer.text).toBeUndefined()
    expect(answer.data).toEqual({ task: { id, taskId, status: 'ENDED' }, missing: null })
    const refused = await graphql(gateway, `{ task(id: "nope") { id } }`)
    expect(refused.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT')
    const userId = await graphql(gateway, `{ users(first: 1) { edges { node { id } } } }`)
    const wrongType = await graphql(gateway, `query($id: ID!) { task(id: $id) { id } }`, {
      id: userId.data.users.edges[0].node.id,
    })
    expect(wrongType.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT')
  })

  it('counts tasks per service code for a dashboard, filterable like tasks', async () => {
    const answer = await graphql(
      gateway,
      `query($filter: TaskFilter) { taskCounts(filter: $filter) { serviceCode live waitingReconnect ended total ` +
        `viewers outputBytes } }`,
    )
    expect(answer.errors, answer.text).toBeUndefined()
    // The counts are the tasks query's totals by status, in one round trip; every session has
    // left the task list, so nobody watches any more.
    const total = async (status?: string) =>
      (
        await graphql(gateway, 'query($filter: TaskFilter) { tasks(filter: $filter) { totalCount } }', {
          filter: status ? { status: [status] } : {},
        })
      ).data.tasks.totalCount
    expect(answer.data.taskCounts).toEqual([
      {
        serviceCode: 'TESTING',
        live: await total('LIVE'),
        waitingReconnect: await total('WAITING_RECONNECT'),
        ended: await total('ENDED'),
        total: scenario.sessions.length,
        viewers: 0,
        outputBytes: 0,
      },
    ])
    expect(await total()).toBe(scenario.sessions.length)
    const author = scenario.sessions[0]!.author
    const mine = await graphql(
      gateway,
      `query($filter: TaskFilter) { taskCounts(filter: $filter) { serviceCode total } }`,
      { filter: { userName: author } },
    )
    expect(mine.data.taskCounts).toEqual([
      { serviceCode: 'TESTING', total: scenario.sessions.filter((s) => s.author.startsWith(author)).length },
    ])
    const none = await graphql(gateway, `{ taskCounts(filter: { serviceCode: "NOBODY" }) { total } }`)
    expect(none.data.taskCounts).toEqual([])
  })

  it('lists the users the task list and the notifications named', async () => {
    const answer = await graphql(
      gateway,
      `{ users(first: 100) { totalCount edges { node { serviceCode userName online lastSeenAt } } } }`,
    )
    expect(answer.errors, answer.text).toBeUndefined()
    const names = answer.data.users.edges.map((e: { node: { userName: string } }) => e.node.userName)
    for (const session of scenario.sessions) expect(names).toContain(session.author)
    expect(answer.data.users.edges.every((e: { node: { online: boolean } }) => e.node.online === false)).toBe(true)
  })

  it(
    "reports the task list's health, and when it fails, " + 'still answers from history without an error entry',
    async () => {
      const healthy = await graphql(
        gateway,
        `{ upstream(serviceCode: "TESTING") { configured healthy stale consecutiveFailures lastSuccessAt lastError ` +
          `{ kind ret } taskCount } }`,
      )
      expect(healthy.data.upstream).toMatchObject({
        configured: true,
        healthy: true,
        consecutiveFailures: 0,
        taskCount: 0,
      })

      simulator.server.behave({ ret: 40101 })
      // A poll already under way may still bring the last good answer; the next one fails.
      const status = async () =>
        (
          await graphql(
            gateway,
            `{ upstream(serviceCode: "TESTING") { healthy consecutiveFailures lastSuccessAt lastError { kind ret } } }`,
          )
        ).data.upstream
      await expect.poll(async () => (await status()).healthy, { timeout: 10_000 }).toBe(false)
      const answer = await graphql(gateway, `{ tasks(first: 50) { totalCount } }`)
      expect(answer.status).toBe(200)
      expect(answer.errors, answer.text).toBeUndefined()
      expect(answer.data.tasks.totalCount).toBe(scenario.sessions.length)
      expect(await status()).toMatchObject({
        healthy: false,
        consecutiveFailures: expect.any(Number),
        lastSuccessAt: expect.any(String),
        lastError: { kind: 'RET', ret: 40101 },
      })
      simulator.server.behave({})

      const unknown = await graphql(
        gateway,
        `{ upstream(serviceCode: "NOBODY") { configured healthy lastError { kind } } }`,
      )
      expect(unknown.data.upstream).toEqual({ configured: false, healthy: false, lastError: null })
      const all = await graphql(gateway, `{ upstreams { serviceCode configured } }`)
      expect(all.data.upstreams).toEqual([{ serviceCode: 'TESTING', configured: true }])
    },
  )
})
