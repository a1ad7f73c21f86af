import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Config } from '../../src/config/config.schema.js'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { toGlobalId } from '../../src/adapters/graphql/global.id.js'
import { acquireLeases } from '../../src/storage/lease.statements.js'
import { incidents } from '../../src/storage/tables/incident.table.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { deliverTo, SECRET, send, signFor, TEST_CONFIG } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'
import { ISSUER, type ProviderKey, providerKey, signToken } from '../support/jwks.server.js'
import { scrapeMetrics } from '../support/metrics.scrape.js'
import { subscribe } from '../support/subscription.client.js'

// Issue 42, section 2: a key with `userName`, and a token whose claims name the user, see only
// that broadcaster's tasks, on every path. Each test below runs once as each of the two.
const CODE = 'TENANT_A'
const MEI = 'anchor_07'
const OTHER = 'anchor_99'
const KEYS = { mei: 'key-of-mei', ops: 'key-of-operators' }
const SUBJECT = { sub: 'u_8812', name: 'Mei Chen' }
const bearer = (key: string) => ({ authorization: `Bearer ${key}` })
/** The broadcaster's two ways in: the key of the file, and a token from the provider (signed in `beforeAll`). */
const AS = [
  { as: 'a key', secret: () => KEYS.mei, actor: 'mei' },
  { as: 'a token', secret: () => credentials.token, actor: `${SUBJECT.sub} (${SUBJECT.name})` },
]
const credentials = { token: '' }
const OWN = ['mei-live-1', 'mei-live-2']
const FOREIGN = 'other-live-1'
const idOf = (taskId: string) => toGlobalId('Task', CODE, taskId)
const taskIds = (edges: Array<{ node: { taskId: string | null } }>) => edges.map((edge) => edge.node.taskId)

/** Every callback of one live: its start and archive name the author; its thumbnail and end name none. */
async function playLive(gateway: Gateway, taskId: string, author: string): Promise<void> {
  const samples = sampleCallbacks(taskId, CODE)
  for (const fields of [
    { ...samples.liveStart, author },
    samples.thumbnail,
    { ...samples.archived, author, file_name: `${taskId}.mp4` },
    samples.liveEnd,
    { ...samples.clientDisconnect, username: author },
  ])
    expect((await deliverTo(gateway, fields as Record<string, string>)).status).toBe(200)
}

describe(`a broadcaster's own view: apiKeys[].userName and a token's userName claim (${driverName})`, () => {
  let db: TestDatabase
  let gateway: Gateway
  let config: Config
  let provider: ProviderKey

  beforeAll(async () => {
    db = await openTestDatabase()
    provider = await providerKey('k1')
    const claims = { ...SUBJECT, livegate: { serviceCodes: [CODE], can: ['operate'], userName: MEI } }
    credentials.token = await signToken({ key: provider, claims, expiresIn: 3600 })
    config = loadConfig({
      env: {},
      value: {
        ...TEST_CONFIG,
        services: [{ serviceCode: CODE, secrets: [SECRET] }],
        apiKeys: [
          { name: 'mei', key: KEYS.mei, serviceCodes: [CODE], userName: MEI, can: ['operate'] },
          { name: 'ops', key: KEYS.ops, serviceCodes: ['*'], can: ['operate'] },
        ],
        graphql: { maxAliases: 10, maxCost: 50_000 },
        auth: { jwt: { keys: [provider.jwk], issuer: ISSUER, audience: 'livegate' } },
      },
    })
    gateway = await startGateway(config, { database: db.database })
    for (const taskId of OWN) await playLive(gateway, taskId, MEI)
    await playLive(gateway, FOREIGN, OTHER)
    // Their rules are another instance's (it holds their leases): this gateway, which configures none, leaves
    // the incidents open for the test to acknowledge rather than resolving them as rules removed.
    await acquireLeases(db.database.db, ['alerts:r', 'alerts:service'], 'another-instance', 3_600_000)
    const at = new Date()
    const incident = { rule: 'r', severity: 'WARNING' as const, state: 'OPEN' as const, serviceCode: CODE }
    const common = { signal: 'task.health', summary: 's', startedAt: at, openedAt: at }
    await db.database.db.insert(incidents).values([
      { ...incident, ...common, taskId: OWN[0] as string },
      { ...incident, ...common, taskId: FOREIGN },
      { ...incident, ...common, rule: 'service', taskId: null },
    ])
  }, 300_000)

  afterAll(async () => {
    await gateway?.close()
    await db?.drop()
  })

  const reads = `{
    tasks { totalCount edges { node { taskId user { userName } notifications { totalCount edges { node { taskId } } }
      recordings { taskId } incidents { rule } } } }
    own: task(id: "${idOf(OWN[0] as string)}") { taskId }
    foreign: task(id: "${idOf(FOREIGN)}") { taskId }
    node(id: "${idOf(FOREIGN)}") { id }
    byTaskIds: tasks(filter: { taskIds: ["${FOREIGN}"] }) { totalCount edges { node { taskId } } }
    ended: tasks(filter: { status: [ENDED] }) { totalCount }
    taskCounts { total }
  }`
  const more = `{
    users { totalCount edges { node { userName tasks { totalCount edges { node { taskId } } }
      recordings { totalCount } } } }
    notifications { totalCount edges { node { taskId } } }
    foreignNotes: notifications(filter: { taskIds: ["${FOREIGN}"] }) { totalCount }
    recordings { totalCount edges { node { taskId userName } } }
    incidents { totalCount edges { node { rule task { taskId } } } }
    otherUser: node(id: "${toGlobalId('User', CODE, OTHER)}") { id }
  }`

  it.each(AS)("lists, totals, edges and ids hold only the user's own tasks ($as)", async ({ secret }) => {
    const answer = await graphql(gateway, reads, {}, { headers: bearer(secret()) })
    expect(answer.errors, answer.text).toBeUndefined()
    const data = answer.data
    expect(new Set(taskIds(data.tasks.edges))).toEqual(new Set(OWN))
    expect(data.tasks.totalCount).toBe(OWN.length)
    for (const edge of data.tasks.edges) {
      expect(edge.node.user).toEqual({ userName: MEI })
      // All four of the task's callbacks, the end and thumbnail (which name no user) too.
      expect(edge.node.notifications.totalCount).toBe(4)
      expect(taskIds(edge.node.notifications.edges).every((id) => id === edge.node.taskId)).toBe(true)
      expect(edge.node.recordings).toEqual([{ taskId: edge.node.taskId }])
    }
    expect(data.own).toEqual({ taskId: OWN[0] })
    // Another user's task answers exactly as an unknown id.
    expect(data.foreign).toBeNull()
    expect(data.node).toBeNull()
    expect(data.byTaskIds).toEqual({ totalCount: 0, edges: [] })
    expect(data.ended.totalCount).toBe(OWN.length)
    expect(data.taskCounts).toEqual([{ total: OWN.length }])

    const rest = await graphql(gateway, more, {}, { headers: bearer(secret()) })
    expect(rest.errors, rest.text).toBeUndefined()
    expect(rest.data.users.totalCount).toBe(1)
    expect(rest.data.users.edges[0].node.userName).toBe(MEI)
    expect(rest.data.users.edges[0].node.tasks.totalCount).toBe(OWN.length)
    expect(rest.data.users.edges[0].node.recordings.totalCount).toBe(OWN.length)
    expect(rest.data.notifications.totalCount).toBe(OWN.length * 5)
    expect(rest.data.notifications.edges.length).toBe(OWN.length * 5)
    expect(taskIds(rest.data.notifications.edges).filter((id) => id !== null && !OWN.includes(id))).toEqual([])
    expect(rest.data.foreignNotes.totalCount).toBe(0)
    expect(rest.data.recordings.totalCount).toBe(OWN.length)
    expect(new Set(taskIds(rest.data.recordings.edges))).toEqual(new Set(OWN))
    // The incident of the user's task; neither another's nor the service's.
    expect(rest.data.incidents.totalCount).toBe(1)
    expect(rest.data.incidents.edges).toEqual([{ node: { rule: 'r', task: { taskId: OWN[0] } } }])
    expect(rest.data.otherUser).toBeNull()
  })

  it.each(AS)(
    "a task page written as JSON text holds the same, the user's notifications only ($as)",
    async ({ secret }) => {
      // The same database, with the task page's parts written by PostgreSQL (task.json.ts).
      const text = await startGateway(config, { database: db.database, jsonText: true })
      try {
        const page = `{ tasks(first: 10) { totalCount edges { node { taskId notifications(first: 10) {
        edges { node { __typename id } } } } } } }`
        const asText = await graphql(text, page, {}, { headers: bearer(secret()) })
        const asObjects = await graphql(gateway, page, {}, { headers: bearer(secret()) })
        expect(asText.errors, asText.text).toBeUndefined()
        expect(asText.data).toEqual(asObjects.data)
        expect(asText.data.tasks.totalCount).toBe(OWN.length)
        for (const edge of asText.data.tasks.edges) expect(edge.node.notifications.edges).toHaveLength(4)
      } finally {
        await text.close()
      }
    },
  )

  it('an operator key still sees every user', async () => {
    const answer = await graphql(
      gateway,
      `{ tasks { totalCount } incidents { totalCount } }`,
      {},
      {
        headers: bearer(KEYS.ops),
      },
    )
    expect(answer.data).toEqual({ tasks: { totalCount: 3 }, incidents: { totalCount: 3 } })
  })

  it.for(
    AS.flatMap(({ as, secret }) =>
      [
        ['serviceMetrics', `{ serviceMetrics(serviceCode: "${CODE}") { liveTasks } }`],
        ['upstream', `{ upstream(serviceCode: "${CODE}") { configured } }`],
        ['upstreams', '{ upstreams { serviceCode } }'],
        ['webhookEndpoints', '{ webhookEndpoints { name } }'],
        ['callbackReconciliation', `{ upstream(serviceCode: "${CODE}") { callbacks { missingStart } } }`],
      ].map(([figure, query]) => ({ as, secret, figure: figure as string, query: query as string })),
    ),
  )('a service-wide figure ($figure) is refused FORBIDDEN ($as)', async ({ secret, query }) => {
    const answer = await graphql(gateway, query, {}, { headers: bearer(secret()) })
    expect(answer.errors?.[0]?.extensions?.code, answer.text).toBe('FORBIDDEN')
    expect(answer.status).toBeLessThan(500)
  })

  it.each(AS)(
    "acts on the user's own tasks only: another's is an unknown id, a message only to the user ($as)",
    async ({ secret }) => {
      const stop = `mutation($id: ID!) { stopTask(id: $id) { action { id } } }`
      const foreign = await graphql(gateway, stop, { id: idOf(FOREIGN) }, { headers: bearer(secret()) })
      expect(foreign.errors?.[0]?.message, foreign.text).toBe('id names no task livegate knows.')
      // Its own task passes the scope, and stops only at the missing baseUrl of this test's service.
      const own = await graphql(gateway, stop, { id: idOf(OWN[0] as string) }, { headers: bearer(secret()) })
      expect(own.errors?.[0]?.message, own.text).toMatch(/has no baseUrl/)
      const message = `mutation($to: String!) { sendMessage(serviceCode: "${CODE}", userName: $to, text: "hi") {
      action { id } } }`
      const toOther = await graphql(gateway, message, { to: OTHER }, { headers: bearer(secret()) })
      expect(toOther.errors?.[0]?.extensions?.code, toOther.text).toBe('BAD_USER_INPUT')
      expect(toOther.errors?.[0]?.message).toBe('userName names no user this caller may message.')
      const toSelf = await graphql(gateway, message, { to: MEI }, { headers: bearer(secret()) })
      expect(toSelf.errors?.[0]?.message, toSelf.text).toMatch(/has no baseUrl/)
    },
  )

  it("subscriptions push only the user's events; another's task is an unknown id to taskTimeline", async () => {
    type Note = { notificationReceived: { taskId: string | null; userName: string | null } }
    type Incident = {
      incidentChanged: { rule: string; acknowledgedBy: string | null; task: { taskId: string } | null }
    }
    type Act = { actionChanged: { kind: string; taskId: string | null; userName: string | null } }
    type Entry = { taskTimeline: { kind: string } }
    const timeline = 'subscription($id: ID!) { taskTimeline(id: $id) { kind } }'
    // Both ways in at once, each on its own socket: one set of events, two subscribers of each stream.
    const opened = AS.map(({ as, secret }) => {
      const open = <T>(query: string, variables: Record<string, unknown> = {}) =>
        subscribe<T>(gateway.url, query, variables, bearer(secret()))
      return {
        as,
        notes: open<Note>('subscription { notificationReceived { taskId userName } }'),
        changes: open<{ taskChanged: { taskId: string } }>('subscription { taskChanged { taskId } }'),
        incidents: open<Incident>('subscription { incidentChanged { rule acknowledgedBy task { taskId } } }'),
        actions: open<Act>('subscription { actionChanged { kind taskId userName } }'),
        own: open<Entry>(timeline, { id: idOf(OWN[1] as string) }),
        foreign: open<Entry>(timeline, { id: idOf(FOREIGN) }),
        unknown: open<Entry>(timeline, { id: idOf('no-such-task') }),
      }
    })
    const streams = (of: (typeof opened)[number]) => Object.values(of).filter((value) => typeof value !== 'string')
    try {
      // Every subscriber joined the engine before the one-shot events (the acknowledgements) happen.
      const joined = async () =>
        (await scrapeMetrics(gateway.url))
          .filter((sample) => sample.name === 'livegate_subscriptions' && sample.labels.field !== 'metricsSampled')
          .map((sample) => sample.value)
      await expect.poll(joined, { timeout: 30_000 }).toEqual([2, 2, 2, 2, 2])
      // An operator acknowledges the other user's incident and the service's; the broadcaster their own.
      const listed = await graphql(
        gateway,
        '{ incidents { edges { node { id rule task { taskId } } } } }',
        {},
        {
          headers: bearer(KEYS.ops),
        },
      )
      const ack = 'mutation($id: ID!) { acknowledgeIncident(id: $id) { acknowledgedBy } }'
      for (const { node } of listed.data.incidents.edges as Array<{
        node: { id: string; task: { taskId: string } | null }
      }>) {
        const mine = node.task?.taskId === OWN[0]
        const answer = await graphql(
          gateway,
          ack,
          { id: node.id },
          {
            headers: bearer(mine ? credentials.token : KEYS.ops),
          },
        )
        expect(answer.errors, answer.text).toBeUndefined()
        // Issue 42, section 3: the token's subject and name, never null.
        expect(answer.data.acknowledgeIncident.acknowledgedBy).toBe(mine ? 'u_8812 (Mei Chen)' : 'ops')
      }
      let n = 0
      await expect
        .poll(
          async () => {
            for (const [taskId, author] of [
              [FOREIGN, OTHER],
              [OWN[1] as string, MEI],
            ] as const) {
              const samples = sampleCallbacks(taskId, CODE)
              // A thumbnail names no user: only its task tells whose it is.
              await send(signFor(gateway, { ...samples.thumbnail, file_name: `t${n++}.jpg` } as Record<string, string>))
              await send(signFor(gateway, { ...samples.clientDisconnect, username: author } as Record<string, string>))
            }
            return opened.every(
              (of) =>
                of.notes.events.length > 1 &&
                of.changes.events.length > 1 &&
                [of.incidents, of.actions, of.own].every((stream) => stream.events.length > 0),
            )
          },
          { timeout: 30_000, interval: 300 },
        )
        .toBe(true)
      for (const of of opened) {
        for (const stream of [of.notes, of.changes, of.incidents, of.actions, of.own])
          expect(stream.errors, of.as).toEqual([])
        for (const { notificationReceived: note } of of.notes.events)
          expect(note.taskId === OWN[1] || (note.taskId === null && note.userName === MEI), JSON.stringify(note)).toBe(
            true,
          )
        expect(
          of.changes.events.every((event) => OWN.includes(event.taskChanged.taskId)),
          of.as,
        ).toBe(true)
        // Neither the other user's incident nor the service's: the broadcaster's own, acknowledged by the token.
        expect(of.incidents.events, of.as).toEqual([
          { incidentChanged: { rule: 'r', acknowledgedBy: 'u_8812 (Mei Chen)', task: { taskId: OWN[0] } } },
        ])
        for (const { actionChanged: act } of of.actions.events)
          expect(OWN.includes(act.taskId ?? '') || act.userName === MEI, JSON.stringify(act)).toBe(true)
        expect(
          of.actions.events.map((event) => event.actionChanged.kind),
          of.as,
        ).toContain('ACKNOWLEDGE_INCIDENT')
        // Another user's task answers as a task that does not exist.
        await expect.poll(() => of.foreign.errors.length).toBe(1)
        await expect.poll(() => of.unknown.errors.length).toBe(1)
        expect(of.foreign.errors, of.as).toEqual(of.unknown.errors)
        expect(of.foreign.events).toEqual([])
      }
    } finally {
      for (const of of opened) for (const stream of streams(of)) await stream.dispose()
    }
  })
})
