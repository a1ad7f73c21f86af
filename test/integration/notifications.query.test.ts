import { randomUUID } from 'node:crypto'
import { desc } from 'drizzle-orm'
import { describe, expect } from 'vitest'
import { callbacks } from '../../src/storage/tables/callback.table.js'
import { sentFields } from '../../src/model/callback.record.js'
import { latestNotificationsForTasks, type NotificationRow } from '../../src/storage/notification.queries.js'
import { toGlobalId } from '../../src/adapters/graphql/global.id.js'
import { createLoaders } from '../../src/adapters/graphql/reads/loaders.create.js'
import { CALLBACK_KINDS } from '../../src/model/callback.parse.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName } from '../support/database.fixture.js'
import { type GatewayFixtures, test } from '../support/gateway.fixture.js'
import { type GraphqlAnswer, graphql } from '../support/graphql.client.js'

// Test files share one database per file, so every test works with task ids of its own.
const taskId = () => `task-${randomUUID()}`
const KIND_OF_TYPE = new Map<number, string>(Object.entries(CALLBACK_KINDS).map(([type, kind]) => [Number(type), kind]))
const STACK_TRACE = /stacktrace|\bat .*\.(ts|js|mjs):\d+/i

const NOTIFICATIONS = /* GraphQL */ `
  query Notifications($filter: NotificationFilter, $first: Int, $after: String) {
    notifications(filter: $filter, first: $first, after: $after) {
      totalCount
      pageInfo { hasNextPage endCursor }
      edges {
        cursor
        node {
          __typename id kind type serviceCode vsId taskId userName receivedAt deliveries signatureVerified fields cursor
          ... on LiveStartNotification {
            playUrl timeShiftUrl width height createdAt duration path clientType clientVersion
            isResume tag opaque liveOnly format { container containerName videoCodec audioCodec }
          }
          ... on LiveEndNotification {
            reachEnd outputIndex httpOutputBytes inputBytes createdAt duration isResume tag opaque liveOnly
            format { container containerName videoCodec audioCodec }
          }
          ... on ArchivedNotification {
            playUrl fileName path width height outputIndex httpOutputBytes inputBytes clientType clientVersion
            createdAt duration isResume tag opaque liveOnly format { container containerName videoCodec audioCodec }
          }
          ... on ThumbnailNotification { imageUrl width height fileName path opaque liveOnly }
          ... on ClientDisconnectNotification { sessionDuration disconnectReason disconnectReasonCode }
          ... on LiveResumeNotification { status }
        }
      }
    }
  }
`

interface Filter {
  serviceCode?: string
  types?: number[]
  kinds?: string[]
  taskIds?: string[]
  userName?: string
  receivedFrom?: string
  receivedTo?: string
}
type Node = Record<string, unknown> & { id: string; cursor: string; __typename: string }
interface Page {
  notifications: {
    totalCount: number
    pageInfo: { hasNextPage: boolean; endCursor: string | null }
    edges: Array<{ cursor: string; node: Node }>
  }
}

const list = (
  gateway: GatewayFixtures['gateway'],
  variables: { filter?: Filter; first?: number; after?: string | null | undefined },
) => graphql<Page>(gateway, NOTIFICATIONS, variables)

/** The page's data, failing the test with the answer when it carries errors. */
function pageOf(answer: GraphqlAnswer<Page>): Page['notifications'] {
  expect(answer.errors, answer.text).toBeUndefined()
  expect(answer.status).toBe(200)
  return (answer.data as Page).notifications
}

/** Every id a filter lists, paging through with `first`. */
async function listAll(gateway: GatewayFixtures['gateway'], filter: Filter, first = 7): Promise<string[]> {
  const ids: string[] = []
  let after: string | null = null
  for (let pages = 0; pages < 1000; pages++) {
    const page = pageOf(await list(gateway, { filter, first, after }))
    ids.push(...page.edges.map((edge) => edge.node.id))
    if (!page.pageInfo.hasNextPage) return ids
    after = page.pageInfo.endCursor
  }
  throw new Error('no last page')
}

/** The same filter, applied in memory to every stored row: the oracle for the SQL. */
async function expectedIds(db: GatewayFixtures['db'], filter: Filter): Promise<string[]> {
  const rows = await db.database.db.select().from(callbacks).orderBy(desc(callbacks.id))
  return rows
    .filter(
      (row) =>
        (filter.serviceCode === undefined || row.serviceCode === filter.serviceCode) &&
        (filter.types === undefined || filter.types.includes(row.type)) &&
        (filter.kinds === undefined || filter.kinds.includes(KIND_OF_TYPE.get(row.type) ?? 'UNKNOWN')) &&
        (filter.taskIds === undefined || (row.taskId !== null && filter.taskIds.includes(row.taskId))) &&
        (filter.userName === undefined || row.userName === filter.userName) &&
        (filter.receivedFrom === undefined || row.receivedAt >= new Date(filter.receivedFrom)) &&
        (filter.receivedTo === undefined || row.receivedAt < new Date(filter.receivedTo)),
    )
    .map((row) => toGlobalId('Notification', row.id))
}

const deliverAll = async (deliver: GatewayFixtures['deliver'], sent: Array<Record<string, string>>) => {
  for (const fields of sent) {
    const answer = await deliver(fields)
    expect(answer.status, answer.text).toBe(200)
  }
}

describe(`the notifications query on ${driverName}`, () => {
  test('every type resolves to its object type with its typed values, newest first', async ({ gateway, deliver }) => {
    const id = taskId()
    const samples = sampleCallbacks(id)
    const sent = [
      samples.liveStart,
      samples.liveEnd,
      samples.archived,
      samples.thumbnail,
      // Type 8 names no task; give it one so the test can find it.
      { ...samples.clientDisconnect, hashed_id: id },
      samples.liveResume,
      { type: '3', service_code: 'TESTING', hashed_id: id, file_name: 'seg-0.ts', seq: '0' },
    ] as Array<Record<string, string>>
    await deliverAll(deliver, sent)

    const page = pageOf(await list(gateway, { filter: { taskIds: [id] } }))
    expect(page.totalCount).toBe(7)
    expect(page.pageInfo.hasNextPage).toBe(false)
    const nodes = page.edges.map((edge) => edge.node)
    expect(nodes.map((node) => node.__typename)).toEqual([
      'UnknownNotification',
      'LiveResumeNotification',
      'ClientDisconnectNotification',
      'ThumbnailNotification',
      'ArchivedNotification',
      'LiveEndNotification',
      'LiveStartNotification',
    ])
    const [unknown, resume, disconnect, thumbnail, archived, end, start] = nodes as Node[]
    for (const [index, edge] of page.edges.entries()) {
      const fields = sent[sent.length - 1 - index] as Record<string, string>
      expect(edge.node).toMatchObject({
        type: Number(fields.type),
        serviceCode: 'TESTING',
        taskId: id,
        deliveries: 1,
        signatureVerified: true,
        fields,
        cursor: edge.cursor,
      })
      // An opaque global id, the cursor's equal in what it names but never the same text.
      expect(edge.node.id).toMatch(/^[A-Za-z0-9_-]+$/)
      expect(edge.node.id).not.toBe(edge.cursor)
      expect(new Date(edge.node.receivedAt as string).toISOString()).toBe(edge.node.receivedAt)
    }
    expect(nodes.map((node) => node.kind)).toEqual([
      'UNKNOWN',
      'LIVE_RESUME',
      'CLIENT_DISCONNECT',
      'THUMBNAIL',
      'ARCHIVED',
      'LIVE_END',
      'LIVE_START',
    ])

    const format = (container: string) => ({
      container: container.toUpperCase(),
      containerName: container,
      videoCodec: 'libx264',
      audioCodec: 'aac',
    })
    expect(start).toMatchObject({
      userName: 'alice',
      vsId: 'xvs-5',
      playUrl: samples.liveStart?.url,
      timeShiftUrl: samples.liveStart?.svod_url,
      width: 480,
      height: 800,
      createdAt: '2015-10-13T01:57:26.000Z',
      duration: 0,
      format: format('flv'),
      path: 'TESTING/20151013/01/57/flv/',
      clientType: 10,
      clientVersion: '451',
      isResume: false,
      tag: 'tcp_output_live_only',
      opaque: 'order=42&room=7',
      liveOnly: false,
    })
    expect(end).toMatchObject({
      reachEnd: true,
      outputIndex: 0,
      httpOutputBytes: 1048576,
      inputBytes: 2097152,
      duration: 61.5,
      createdAt: '2015-10-13T01:57:26.000Z',
      format: format('flv'),
      opaque: 'order=42',
      isResume: false,
      liveOnly: false,
    })
    expect(archived).toMatchObject({
      userName: 'alice',
      playUrl: `http://vod.example/${id}.mp4`,
      fileName: `${id}.mp4`,
      path: 'TESTING/20151013/01/57/mp4/',
      width: 480,
      height: 800,
      outputIndex: 1,
      httpOutputBytes: 0,
      inputBytes: 2097152,
      duration: 61.5,
      format: format('mp4'),
      tag: 'archive',
      // Sent empty: no value, and `fields` still holds the empty string.
      opaque: null,
    })
    expect(archived?.fields).toMatchObject({ opaque: '' })
    expect(thumbnail).toMatchObject({
      imageUrl: `http://img.example/${id}.jpg`,
      width: 320,
      height: 240,
      fileName: `${id}.jpg`,
      path: 'TESTING/20151013/01/57/jpg/',
      liveOnly: false,
    })
    expect(disconnect).toMatchObject({
      userName: 'alice',
      sessionDuration: 3600,
      disconnectReason: 'CLIENT_CLOSED',
      disconnectReasonCode: 1,
    })
    expect(resume).toMatchObject({ userName: 'alice', vsId: null, status: 'WAITING' })
    expect(unknown).toMatchObject({ type: 3, fields: { seq: '0', file_name: 'seg-0.ts' } })
    expect(Object.keys(unknown as Node)).not.toContain('status')
  })

  test(
    'values past what their fields carry: bytes past 2^31, unpublished codes, unreadable values, unverified ' +
      'signatures',
    async ({ gateway, deliver }) => {
      const id = taskId()
      const samples = sampleCallbacks(id)
      await deliverAll(deliver, [
        {
          ...samples.liveEnd,
          http_output_bytes: '5000000000',
          input_bytes: '9007199254740',
          output_idx: '99999999999',
        } as Record<string, string>,
        { ...samples.clientDisconnect, hashed_id: id, disconnect_reason: '7' } as Record<string, string>,
        { ...samples.liveStart, size: 'big', created_at: 'yesterday', format: 'flv' } as Record<string, string>,
      ])
      const logged = await deliver(
        { ...samples.liveResume, service_code: 'LOGONLY', status: '1' } as Record<string, string>,
        { secret: 'wrong' },
      )
      expect(logged.status, logged.text).toBe(200)

      const nodes = pageOf(await list(gateway, { filter: { taskIds: [id] } })).edges.map((edge) => edge.node)
      const [resume, start, disconnect, end] = nodes
      expect(end).toMatchObject({
        httpOutputBytes: 5_000_000_000,
        inputBytes: 9_007_199_254_740,
        outputIndex: null,
        fields: { output_idx: '99999999999' },
      })
      expect(disconnect).toMatchObject({ disconnectReason: null, disconnectReasonCode: 7 })
      expect(start).toMatchObject({
        width: null,
        height: null,
        createdAt: null,
        format: { container: 'FLV', containerName: 'flv', videoCodec: null, audioCodec: null },
        fields: { size: 'big' },
      })
      expect(resume).toMatchObject({
        __typename: 'LiveResumeNotification',
        status: 'RESUMED',
        serviceCode: 'LOGONLY',
        signatureVerified: false,
      })
    },
  )

  test('each filter alone and combined lists exactly the matching callbacks, with their total count', async ({
    gateway,
    deliver,
    db,
  }) => {
    const [a, b] = [taskId(), taskId()]
    const [alice, bob] = [`alice-${randomUUID()}`, `bob-${randomUUID()}`]
    const sa = sampleCallbacks(a)
    const sb = sampleCallbacks(b, 'ROTATING')
    const sent: Array<[Record<string, string>, { secret?: string }]> = [
      [{ ...sa.liveStart, author: alice } as Record<string, string>, {}],
      [{ ...sa.liveEnd } as Record<string, string>, {}],
      [{ ...sa.clientDisconnect, username: alice } as Record<string, string>, {}],
      [{ ...sb.liveStart, author: bob } as Record<string, string>, { secret: 'def-new' }],
      [{ ...sa.liveResume, username: alice } as Record<string, string>, {}],
      [{ ...sb.thumbnail } as Record<string, string>, { secret: 'def-new' }],
      [{ ...sb.liveResume, username: bob } as Record<string, string>, { secret: 'def-new' }],
    ]
    for (const [fields, options] of sent) {
      // Apart in time, so a time range can cut between any two of them.
      await new Promise((resolve) => setTimeout(resolve, 5))
      const answer = await deliver(fields, options)
      expect(answer.status, answer.text).toBe(200)
    }
    const ours = (await db.database.db.select().from(callbacks).orderBy(callbacks.id)).slice(-sent.length)
    const at = (index: number) => (ours[index]?.receivedAt as Date).toISOString()

    const filters: Filter[] = [
      { serviceCode: 'ROTATING' },
      { types: [15] },
      { types: [0, 9] },
      { types: [] },
      { taskIds: [a] },
      { taskIds: [a, b] },
      { taskIds: [] },
      { kinds: ['LIVE_RESUME'] },
      { kinds: ['LIVE_START', 'THUMBNAIL'] },
      { kinds: ['UNKNOWN'] },
      { kinds: [] },
      { kinds: ['LIVE_START', 'LIVE_RESUME'], types: [15, 9] },
      { userName: alice },
      { userName: bob },
      { receivedFrom: at(2) },
      { receivedTo: at(4) },
      { receivedFrom: at(2), receivedTo: at(5) },
      { taskIds: [a], types: [0, 15] },
      { serviceCode: 'TESTING', userName: alice, types: [8, 15] },
      { serviceCode: 'ROTATING', receivedFrom: at(4), types: [9, 15] },
      { taskIds: [b], userName: alice },
      {
        serviceCode: 'TESTING',
        types: [0, 1, 8, 15],
        taskIds: [a],
        userName: alice,
        receivedFrom: at(1),
        receivedTo: at(6),
      },
      { taskIds: [`no-such-${randomUUID()}`] },
    ]
    for (const filter of filters) {
      const expected = await expectedIds(db, filter)
      expect(await listAll(gateway, filter), JSON.stringify(filter)).toEqual(expected)
      const page = pageOf(await list(gateway, { filter, first: 1 }))
      expect(page.totalCount, JSON.stringify(filter)).toBe(expected.length)
    }
    // A spot check that the oracle sees what the test set up, not only what the SQL sees.
    expect(await listAll(gateway, { userName: alice })).toHaveLength(3)
    expect(await listAll(gateway, { taskIds: [a], types: [0, 15] })).toHaveLength(2)
    expect(await listAll(gateway, { taskIds: [a], kinds: ['LIVE_START', 'LIVE_RESUME'] })).toHaveLength(2)
    expect(await listAll(gateway, { receivedFrom: at(2), receivedTo: at(5) })).toHaveLength(3)
  })

  test('pages follow each other without duplicates or gaps, and a cursor holds while new callbacks arrive', async ({
    gateway,
    deliver,
  }) => {
    const id = taskId()
    const resume = sampleCallbacks(id).liveResume as Record<string, string>
    const base = Date.now() - 60_000
    for (let i = 0; i < 6; i++) expect((await deliver(resume, { nowMs: base + i })).status).toBe(200)
    const filter = { taskIds: [id] }
    const all = pageOf(await list(gateway, { filter, first: 50 }))
    expect(all.edges).toHaveLength(6)

    const first = pageOf(await list(gateway, { filter, first: 4 }))
    expect(first.edges.map((e) => e.node.id)).toEqual(all.edges.slice(0, 4).map((e) => e.node.id))
    expect(first.pageInfo).toEqual({ hasNextPage: true, endCursor: first.edges[3]?.cursor })
    expect(first.totalCount).toBe(6)

    // A newer callback arrives between pages: it belongs before page one, so page two is unchanged.
    expect((await deliver(resume, { nowMs: base + 100 })).status).toBe(200)
    const second = pageOf(await list(gateway, { filter, first: 4, after: first.pageInfo.endCursor }))
    expect(second.edges.map((e) => e.node.id)).toEqual(all.edges.slice(4).map((e) => e.node.id))
    expect(second.pageInfo).toEqual({ hasNextPage: false, endCursor: second.edges[1]?.cursor })
    expect(second.totalCount).toBe(7)

    // A page that ends exactly at the last row says no page follows; past it is an empty page.
    const exact = pageOf(await list(gateway, { filter, first: 2, after: all.edges[3]?.cursor }))
    expect(exact.edges).toHaveLength(2)
    expect(exact.pageInfo.hasNextPage).toBe(false)
    const past = pageOf(await list(gateway, { filter, first: 2, after: exact.pageInfo.endCursor }))
    expect(past).toMatchObject({ edges: [], pageInfo: { hasNextPage: false, endCursor: null }, totalCount: 7 })

    // first: 0 asks only whether anything is there.
    expect(pageOf(await list(gateway, { filter, first: 0 }))).toMatchObject({
      edges: [],
      pageInfo: { hasNextPage: true, endCursor: null },
      totalCount: 7,
    })

    // Paging one at a time walks the same list.
    const walked = await listAll(gateway, filter, 1)
    expect(walked).toHaveLength(7)
    expect(new Set(walked).size).toBe(7)
    expect(walked.slice(1)).toEqual(all.edges.map((e) => e.node.id))
  })

  test('without first, the default page size applies', async ({ gateway, deliver }) => {
    const id = taskId()
    const resume = sampleCallbacks(id).liveResume as Record<string, string>
    for (let i = 0; i < 3; i++) await deliver(resume, { nowMs: Date.now() - i })
    const page = pageOf(await list(gateway, { filter: { taskIds: [id] } }))
    expect(page.edges).toHaveLength(3)
    // The test configuration keeps the default, 50; the page size shows through a larger list.
    const everything = pageOf(await list(gateway, {}))
    expect(everything.edges.length).toBe(Math.min(50, everything.totalCount))
  })

  const badInputs: Array<{ name: string; variables: Record<string, unknown>; argument?: string; message: RegExp }> = [
    { name: 'first over the largest page', variables: { first: 501 }, argument: 'first', message: /at most 500/ },
    { name: 'a negative first', variables: { first: -1 }, argument: 'first', message: /from 0 to 500/ },
    { name: 'a garbage after', variables: { after: 'garbage!' }, argument: 'after', message: /not a cursor/ },
    {
      name: 'an after that is base64 but not a cursor',
      variables: { after: Buffer.from('hello').toString('base64url') },
      argument: 'after',
      message: /not a cursor/,
    },
    {
      name: 'a cursor of another connection',
      variables: { after: Buffer.from('t1:task-1').toString('base64url') },
      argument: 'after',
      message: /not a cursor/,
    },
    {
      name: 'a cursor with no row id',
      variables: { after: Buffer.from('n2:7').toString('base64url') },
      argument: 'after',
      message: /not a cursor/,
    },
    {
      name: 'a cursor with a word for a position',
      variables: { after: Buffer.from('n2:abc:1').toString('base64url') },
      argument: 'after',
      message: /not a cursor/,
    },
    {
      name: 'a cursor past the largest id',
      variables: { after: Buffer.from('n2:7:99999999999999999999').toString('base64url') },
      argument: 'after',
      message: /not a cursor/,
    },
    {
      name: 'a cursor with padding',
      variables: { after: `${Buffer.from('n2:7:1').toString('base64url')}==` },
      argument: 'after',
      message: /not a cursor/,
    },
    {
      name: 'a cursor from before log positions (row id only)',
      variables: { after: Buffer.from('n1:1').toString('base64url') },
      argument: 'after',
      message: /not a cursor/,
    },
    { name: 'a very long after', variables: { after: 'A'.repeat(10_000) }, argument: 'after', message: /not a cursor/ },
    { name: 'an empty after', variables: { after: '' }, argument: 'after', message: /not a cursor/ },
    {
      name: 'a NUL in a text filter',
      variables: { filter: { taskIds: ['a\u0000b'] } },
      argument: 'filter',
      message: /NUL/,
    },
    {
      name: 'too many task ids',
      variables: { filter: { taskIds: Array.from({ length: 501 }, (_, i) => `t${i}`) } },
      argument: 'filter',
      message: /at most 500/,
    },
    {
      name: 'too many types',
      variables: { filter: { types: Array.from({ length: 101 }, (_, i) => i) } },
      argument: 'filter',
      message: /at most 100/,
    },
  ]
  for (const c of badInputs) {
    test(`${c.name}: BAD_USER_INPUT with a clear message, never a 5xx`, async ({ gateway }) => {
      const answer = await list(gateway, c.variables)
      expect(answer.status, answer.text).toBeLessThan(500)
      // Null from the resolver; absent when refused before execution (a NUL, in any argument).
      expect(answer.data ?? null, answer.text).toBeNull()
      expect(answer.errors).toHaveLength(1)
      expect(answer.errors?.[0]).toMatchObject({
        message: expect.stringMatching(c.message),
        extensions: { code: 'BAD_USER_INPUT', argumentName: c.argument },
      })
      expect(answer.text).not.toMatch(STACK_TRACE)
    })
  }

  test('values GraphQL itself refuses are answered 400 with a code, never a 5xx or a stack', async ({ gateway }) => {
    const answers = [
      await list(gateway, { filter: { receivedFrom: 'yesterday' } }),
      await list(gateway, { first: 2 ** 31 }),
      await list(gateway, { first: 'ten' } as never),
      await list(gateway, { filter: { types: ['0'] } } as never),
      await graphql(gateway, '{ notifications(first: -5) { totalCount } }'),
      await graphql(gateway, '{ notifications { nope } }'),
      await graphql(gateway, '{ notifications(filter: { receivedTo: "2020-13-45" }) { totalCount } }'),
      await graphql(gateway, '{ notifications { '),
    ]
    for (const answer of answers) {
      expect(answer.status, answer.text).toBeGreaterThanOrEqual(200)
      expect(answer.status, answer.text).toBeLessThan(500)
      expect(answer.errors?.length, answer.text).toBeGreaterThan(0)
      for (const error of answer.errors ?? []) expect(error.extensions?.code, answer.text).toMatch(/^[A-Z_]+$/)
      expect(answer.text).not.toMatch(STACK_TRACE)
    }
    expect(answers[4]?.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT')
  })

  test('text filters are matched exactly, whatever they hold', async ({ gateway }) => {
    for (const taskId of ["'; drop table callbacks; --", '%', '_', '\\', '\ud800', '🏃'.repeat(1000)]) {
      const page = pageOf(await list(gateway, { filter: { taskIds: [taskId] }, first: 1 }))
      expect(page).toMatchObject({ edges: [], totalCount: 0 })
    }
  })
})

describe(`latestNotificationsForTasks on ${driverName}`, () => {
  test("gives each task's newest callbacks, newest first, in one batch", async ({ deliver, db }) => {
    const [a, b, c] = [taskId(), taskId(), taskId()]
    const base = Date.now() - 60_000
    for (let i = 0; i < 3; i++)
      await deliver(sampleCallbacks(a).liveResume as Record<string, string>, { nowMs: base + i })
    await deliver(sampleCallbacks(b).liveStart as Record<string, string>)
    const rows = await db.database.db.select().from(callbacks).orderBy(desc(callbacks.id))
    const idsOf = (task: string) => rows.filter((row) => row.taskId === task).map((row) => row.id)

    const found = await latestNotificationsForTasks(db.database.db, [a, b, c, a], 2)
    expect([...found.keys()].sort()).toEqual([a, b, c].sort())
    expect(found.get(a)?.map((row) => row.id)).toEqual(idsOf(a).slice(0, 2))
    expect(found.get(b)?.map((row) => row.id)).toEqual(idsOf(b))
    expect(found.get(c)).toEqual([])
    const [newest] = found.get(b) ?? []
    expect(newest).toMatchObject({
      type: 0,
      serviceCode: 'TESTING',
      taskId: b,
      userName: 'alice',
      signature: 'verified',
      values: { tag: 'tcp_output_live_only' },
    })
    expect({ ...sentFields(newest as NotificationRow) }).toEqual(sampleCallbacks(b).liveStart)
    expect(newest?.receivedAt).toBeInstanceOf(Date)
    expect(await latestNotificationsForTasks(db.database.db, [], 5)).toEqual(new Map())

    const loaders = createLoaders(db.database.db, undefined)
    const loaded = await Promise.all([a, b, c].map((task) => loaders.notificationsOfTask(1).load(task)))
    expect(loaded.map((list) => list.map((row) => row.id))).toEqual([idsOf(a).slice(0, 1), idsOf(b), []])
  })
})
