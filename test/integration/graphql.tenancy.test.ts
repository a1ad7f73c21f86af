import { createHash } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { UNAUTHORIZED_CLOSE } from '../../src/adapters/websocket/ws.server.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { deliverTo, SECRET, send, signFor, TEST_CONFIG } from '../support/gateway.fixture.js'
import { toGlobalId } from '../../src/adapters/graphql/global.id.js'
import { graphql } from '../support/graphql.client.js'
import { subscribe } from '../support/subscription.client.js'

const KEYS = { a: 'key-for-tenant-a', b: 'key-for-tenant-b', all: 'key-for-operators' }
const bearer = (key: string) => ({ authorization: `Bearer ${key}` })
const TASK_A = 'tenant-a-task'
const TASK_B = 'tenant-b-task'
const ID_A = toGlobalId('Task', 'TENANT_A', TASK_A)
const ID_B = toGlobalId('Task', 'TENANT_B', TASK_B)

describe(`API keys scope every read to their service codes (${driverName})`, () => {
  let db: TestDatabase
  let gateway: Gateway

  beforeAll(async () => {
    db = await openTestDatabase()
    const config = loadConfig({
      env: { KEY_A: KEYS.a },
      value: {
        ...TEST_CONFIG,
        services: [
          { serviceCode: 'TENANT_A', secrets: [SECRET] },
          { serviceCode: 'TENANT_B', secrets: [SECRET] },
        ],
        apiKeys: [
          { name: 'a', key: { env: 'KEY_A' }, serviceCodes: ['TENANT_A'] },
          { name: 'b', key: KEYS.b, serviceCodes: ['TENANT_B'] },
          { name: 'ops', sha256: createHash('sha256').update(KEYS.all).digest('hex'), serviceCodes: ['*'] },
        ],
        graphql: { maxDepth: 7, maxAliases: 3, maxCost: 20_000, maxPageSize: 100 },
      },
    })
    gateway = await startGateway(config, { database: db.database })
    for (const [code, task] of [
      ['TENANT_A', TASK_A],
      ['TENANT_B', TASK_B],
    ] as const) {
      const samples = sampleCallbacks(task, code)
      for (const fields of [
        samples.liveStart,
        samples.thumbnail,
        { ...samples.clientDisconnect, username: `${code}-user` },
      ]) {
        expect((await deliverTo(gateway, fields as Record<string, string>)).status).toBe(200)
      }
    }
  }, 300_000)

  afterAll(async () => {
    await gateway?.close()
    await db?.drop()
  })

  const everything = `{
    tasks { totalCount edges { node { taskId serviceCode notifications { totalCount edges { node { serviceCode } } } }
      } }
    byFilter: tasks(filter: { serviceCode: "TENANT_B" }) { totalCount }
    a: task(id: "${ID_A}") { taskId }
    b: task(id: "${ID_B}") { taskId }
  }`
  const more = `{
    users { totalCount edges { node { serviceCode userName } } }
    notifications { totalCount edges { node { serviceCode taskId } } }
    foreign: notifications(filter: { taskIds: ["${TASK_B}"] }) { totalCount }
    upstream(serviceCode: "TENANT_B") { configured healthy lastPollAt }
  }`

  it(
    'a tenant key sees its own tasks, totals, loaders, users ' + 'and notifications, and nothing of the other tenant',
    async () => {
      const answer = await graphql(gateway, everything, {}, { headers: bearer(KEYS.a) })
      expect(answer.errors, answer.text).toBeUndefined()
      expect(answer.data.tasks.totalCount).toBe(1)
      expect(answer.data.tasks.edges.map((e: { node: { taskId: string } }) => e.node.taskId)).toEqual([TASK_A])
      expect(
        answer.data.tasks.edges[0].node.notifications.edges.every(
          (e: { node: { serviceCode: string } }) => e.node.serviceCode === 'TENANT_A',
        ),
      ).toBe(true)
      expect(answer.data.byFilter.totalCount).toBe(0)
      expect(answer.data.a).toEqual({ taskId: TASK_A })
      expect(answer.data.b).toBeNull()

      const rest = await graphql(gateway, more, {}, { headers: bearer(KEYS.a) })
      expect(rest.errors, rest.text).toBeUndefined()
      expect(rest.data.users.edges.map((e: { node: { serviceCode: string } }) => e.node.serviceCode)).toEqual(
        ['TENANT_A', 'TENANT_A'].slice(0, rest.data.users.totalCount),
      )
      expect(rest.data.notifications.totalCount).toBe(3)
      expect(
        rest.data.notifications.edges.every(
          (e: { node: { serviceCode: string } }) => e.node.serviceCode === 'TENANT_A',
        ),
      ).toBe(true)
      expect(rest.data.foreign.totalCount).toBe(0)
      expect(rest.data.upstream).toEqual({ configured: false, healthy: false, lastPollAt: null })
    },
  )

  it('an operator key (kept only as its SHA-256) sees both tenants', async () => {
    const answer = await graphql(gateway, everything, {}, { headers: bearer(KEYS.all) })
    expect(answer.data.tasks.totalCount).toBe(2)
    expect(answer.data.b).toEqual({ taskId: TASK_B })
  })

  it('no edge, node id, filter or count reaches the other tenant', async () => {
    const ops = await graphql(
      gateway,
      `{ users { edges { node { id serviceCode } } } notifications { edges { node { id serviceCode } } } tasks { ` +
        `edges { node { id outputs { id } } } } }`,
      {},
      { headers: bearer(KEYS.all) },
    )
    const ofB = (edges: Array<{ node: { id: string; serviceCode?: string } }>) =>
      edges.filter((e) => e.node.serviceCode === 'TENANT_B').map((e) => e.node.id)
    const idsOfB = [
      ID_B,
      ...ofB(ops.data.users.edges),
      ...ofB(ops.data.notifications.edges),
      ...ops.data.tasks.edges
        .filter((e: any) => e.node.id === ID_B)
        .flatMap((e: any) => e.node.outputs.map((o: { id: string }) => o.id)),
    ]
    expect(idsOfB.length).toBeGreaterThanOrEqual(4)
    // Two operations: the test configuration allows three aliases each.
    const probe = `query($ids: [ID!]!, $id: ID!, $userIds: [ID!]) {
      nodes(ids: $ids) { id }
      node(id: $id) { id }
      byIds: tasks(filter: { ids: [$id] }) { totalCount }
      byTaskIds: tasks(filter: { taskIds: ["${TASK_B}"] }) { totalCount }
      byUsers: tasks(filter: { userIds: $userIds }) { totalCount }
      taskCounts { serviceCode total }
    }`
    const walk = `{
      foreignCounts: taskCounts(filter: { serviceCode: "TENANT_B" }) { total }
      users { edges { node { serviceCode tasks { totalCount edges { node { serviceCode } } } } } }
      notifications { edges { node { serviceCode task { serviceCode } user { serviceCode } } } }
      tasks { edges { node { serviceCode user { serviceCode } outputs { task { serviceCode } } } } }
    }`
    const userIds = ofB(ops.data.users.edges)
    expect(userIds.length).toBeGreaterThan(0)
    const answer = await graphql(gateway, probe, { ids: idsOfB, id: ID_B, userIds }, { headers: bearer(KEYS.a) })
    expect(answer.errors, answer.text).toBeUndefined()
    expect(answer.data.nodes).toEqual(idsOfB.map(() => null))
    expect(answer.data.node).toBeNull()
    expect([answer.data.byIds.totalCount, answer.data.byTaskIds.totalCount, answer.data.byUsers.totalCount]).toEqual([
      0, 0, 0,
    ])
    expect(answer.data.taskCounts).toEqual([{ serviceCode: 'TENANT_A', total: 1 }])
    const walked = await graphql(gateway, walk, {}, { headers: bearer(KEYS.a) })
    expect(walked.errors, walked.text).toBeUndefined()
    expect(walked.data.foreignCounts).toEqual([])
    // Every service code anywhere in the answer is the tenant's own.
    const codes = [...walked.text.matchAll(/"serviceCode":"([^"]+)"/g)].map((match) => match[1])
    expect(codes.length).toBeGreaterThan(4)
    expect(new Set(codes)).toEqual(new Set(['TENANT_A']))
    // The operator sees B's through the same ids.
    const all = await graphql(gateway, probe, { ids: idsOfB, id: ID_B, userIds }, { headers: bearer(KEYS.all) })
    expect(all.data.nodes.every((node: unknown) => node !== null)).toBe(true)
    expect(all.data.byIds.totalCount).toBe(1)
  })

  it.each([
    ['no key', {}],
    ['a wrong key', bearer('not-a-key')],
    ['a malformed header', { authorization: KEYS.a }],
  ])('%s gets 401 UNAUTHENTICATED and no data', async (_name, headers) => {
    const answer = await graphql(gateway, '{ tasks { totalCount } }', {}, { headers })
    expect(answer.status).toBe(401)
    expect(answer.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED')
    expect(answer.data ?? null).toBeNull()
  })

  it('subscriptions are scoped the same way, and a socket without a key is closed with 4401', async () => {
    const mine = subscribe<{ notificationReceived: { serviceCode: string; taskId: string } }>(
      gateway.url,
      'subscription { notificationReceived { serviceCode taskId } }',
      {},
      bearer(KEYS.a),
    )
    const tasksOfA = subscribe<{ taskChanged: { taskId: string } }>(
      gateway.url,
      'subscription { taskChanged { taskId } }',
      {},
      bearer(KEYS.a),
    )
    // Asking for the other tenant's task by id subscribes to nothing.
    const foreign = subscribe<{ taskChanged: { taskId: string } }>(
      gateway.url,
      `subscription { taskChanged(filter: { ids: ["${ID_B}"] }) { taskId } }`,
      {},
      bearer(KEYS.a),
    )
    const anonymous = subscribe(gateway.url, 'subscription { notificationReceived { id } }')
    try {
      expect(await anonymous.closed).toBe(UNAUTHORIZED_CLOSE.code)
      let n = 0
      await expect
        .poll(
          async () => {
            for (const [code, task] of [
              ['TENANT_B', TASK_B],
              ['TENANT_A', TASK_A],
            ] as const) {
              await send(
                signFor(gateway, { ...sampleCallbacks(task, code).thumbnail, file_name: `t${n++}.jpg` } as Record<
                  string,
                  string
                >),
              )
            }
            return Math.min(mine.events.length, tasksOfA.events.length)
          },
          { timeout: 15_000, interval: 300 },
        )
        .toBeGreaterThan(0)
      expect(mine.events.every((e) => e.notificationReceived.serviceCode === 'TENANT_A')).toBe(true)
      expect(tasksOfA.events.every((e) => e.taskChanged.taskId === TASK_A)).toBe(true)
      expect(foreign.events).toEqual([])
    } finally {
      await foreign.dispose()
      await mine.dispose()
      await tasksOfA.dispose()
      await anonymous.dispose()
    }
  })

  it.each([
    [
      'too deep',
      '{ tasks { edges { node { outputs { streams { kind } recordings { format { container } } } notifications { ' +
        'edges { node { ... on LiveStartNotification { format { container } } } } } } } } }',
      'QUERY_TOO_DEEP',
    ],
    [
      'too many aliases',
      '{ a: tasks { totalCount } b: tasks { totalCount } c: tasks { totalCount } d: tasks { totalCount } }',
      'TOO_MANY_ALIASES',
    ],
    [
      'too costly',
      '{ tasks(first: 100) { edges { node { notifications(first: 100) { edges { node { id } } } } } } }',
      'QUERY_TOO_COSTLY',
    ],
    [
      "too costly through a user's tasks",
      '{ users(first: 100) { edges { node { tasks(first: 100) { edges { node { id } } } } } } }',
      'QUERY_TOO_COSTLY',
    ],
    ['a page over the largest', '{ tasks(first: 101) { totalCount } }', 'BAD_USER_INPUT'],
  ])('an operation %s is refused with its code, never a 5xx', async (_name, query, code) => {
    const answer = await graphql(gateway, query, {}, { headers: bearer(KEYS.all) })
    expect(answer.status).toBeLessThan(500)
    expect(answer.errors?.[0]?.extensions?.code, answer.text).toBe(code)
  })

  it('the same limits hold for subscriptions over the socket', async () => {
    const deep = subscribe(
      gateway.url,
      `subscription { notificationReceived { a: id b: id c: id d: id } }`,
      {},
      bearer(KEYS.all),
    )
    try {
      await expect.poll(() => deep.errors.length, { timeout: 20_000 }).toBeGreaterThan(0)
      expect(JSON.stringify(deep.errors)).toContain('TOO_MANY_ALIASES')
    } finally {
      await deep.dispose()
    }
  })

  it('without API keys, livegate refuses to serve data on a non-loopback address', async () => {
    const config = loadConfig({ env: {}, value: { ...TEST_CONFIG, host: '0.0.0.0' } })
    await expect(startGateway(config, { database: db.database })).rejects.toThrow(
      /no API keys are configured.*loopback/,
    )
  })
})
