import { parse, print } from 'graphql'
import { afterAll, describe, expect } from 'vitest'
import WebSocket from 'ws'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { jsonTextExecution } from '../../src/adapters/graphql/pipeline/json.rewrite.js'
import { toGlobalId } from '../../src/adapters/graphql/global.id.js'
import { buildGraphqlSchema } from '../../src/adapters/graphql/pipeline/schema.build.js'
import { applyToGraph, taskListEvidence } from '../../src/work/graph/graph.evidence.js'
import type { Db } from '../../src/storage/database.client.js'
import { upsertListedFiles } from '../../src/storage/graph/recording.statements.js'
import { TASK_PAGE_QUERY } from '../bench/query.bench.js'
import { SEED_SERVICE_CODE, seedTasks, taskListOf } from '../bench/query.seed.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { deliverTo, TEST_CONFIG, test } from '../support/gateway.fixture.js'

/**
 * A task page's pure-data parts written by PostgreSQL as JSON text (src/storage/graph/task.json.ts,
 * src/adapters/graphql/pipeline/json.rewrite.ts) must answer byte for byte what the object path
 * answers: two gateways on one database, one each way, every operation sent to both, several
 * times (graphql-js first, compiled after), over HTTP and over graphql-ws.
 */

const NOTIFICATION_KIND_FIELDS = {
  start:
    'playUrl timeShiftUrl width height path createdAt duration format { container containerName videoCodec ' +
    'audioCodec } tag isResume opaque liveOnly clientType clientVersion',
  end:
    'reachEnd outputIndex inputBytes httpOutputBytes createdAt duration format { container } tag isResume opaque ' +
    'liveOnly',
  archived:
    'playUrl fileName path width height outputIndex httpOutputBytes inputBytes clientType clientVersion ' +
    'createdAt duration format { videoCodec }',
}
const OUTPUT_FIELDS =
  'index tag playUrl timeShiftUrl fileName relativeDir width height httpOutputBytes connections startedAt endedAt'
const RECORDING_FIELDS =
  'outputIndex tag playUrl path fileName width height duration inputBytes httpOutputBytes createdAt receivedAt ' +
  'format { container containerName videoCodec audioCodec }'

/** Each operation, its variables, and how many parts of it are written as text (the shapes PERFORMANCE.md lists). */
const OPERATIONS: Array<{ name: string; query: string; variables?: Record<string, unknown>; textParts: number }> = [
  { name: 'the bench task page', query: TASK_PAGE_QUERY, variables: { first: 20 }, textParts: 4 },
  {
    name: 'the bench task page, filtered',
    query: TASK_PAGE_QUERY,
    variables: { first: 20, filter: { status: ['LIVE', 'WAITING_RECONNECT'] } },
    textParts: 4,
  },
  {
    name: 'notifications: every kind and field the text writes, aliases, __typename, fragments on the interface',
    query: `query N($per: Int) { tasks(first: 12) { edges { node { taskId
      latest: notifications(first: $per) { __typename e: edges { __typename c: cursor n: node { ...Common
        ... on LiveStartNotification { ${NOTIFICATION_KIND_FIELDS.start} }
        ... on LiveEndNotification { ${NOTIFICATION_KIND_FIELDS.end} }
        ... on ArchivedNotification { ${NOTIFICATION_KIND_FIELDS.archived} }
        ... on ThumbnailNotification { imageUrl width height fileName path opaque liveOnly }
        ... on ClientDisconnectNotification { sessionDuration disconnectReason disconnectReasonCode }
        ... on LiveResumeNotification { status }
        ... on Node { id } } } } } } } }
      fragment Common on Notification { __typename id kind type serviceCode vsId taskId userName receivedAt deliveries
        signatureVerified cursor }`,
    variables: { per: 7 },
    textParts: 1,
  },
  {
    name: 'notifications: the default page size, and none',
    query:
      '{ tasks(first: 6) { edges { node { a: notifications { edges { node { id } } } b: notifications(first: 0) ' +
      '{ edges { cursor } } } } } }',
    textParts: 2,
  },
  {
    name:
      'notifications left to the object path: totalCount, pageInfo, a filter, fields, task and user; a page size ' +
      'refused',
    query: `{ tasks(first: 4) { edges { node {
      a: notifications(first: 2) { totalCount edges { cursor } }
      b: notifications(first: 2) { pageInfo { hasNextPage } }
      c: notifications(first: 2, filter: { kinds: [THUMBNAIL] }) { edges { cursor } }
      d: notifications(first: 2) { edges { node { fields task { taskId } user { userName } } } }
      e: notifications(first: 100000) { edges { cursor } } } } } }`,
    textParts: 1,
  },
  {
    name: 'every field of every part, __typename at each level',
    query: `{ tasks(first: 30) { __typename edges { __typename node { __typename id
      outputs { __typename ${OUTPUT_FIELDS} format { __typename container containerName videoCodec audioCodec } streams
        { __typename index kind codecId width height copyMode bitRate } recordings { __typename ${RECORDING_FIELDS} } }
      recordings { __typename ${RECORDING_FIELDS} }
      thumbnails { __typename imageUrl path fileName width height receivedAt } } } } }`,
    textParts: 3,
  },
  {
    name: 'aliases at every level, and two pages side by side',
    query: `{ a: tasks(first: 4) { e: edges { n: node { o: outputs { i: index t: tag f: format { c: container } s:
      streams { k: kind w: width } } r: recordings { at: receivedAt } } } }
      b: tasks(first: 3, filter: { status: [ENDED] }) { edges { node { taskId pics: thumbnails { imageUrl } outputs {
        tag } } } } }`,
    textParts: 4,
  },
  {
    name: 'fragments and inline fragments, one fragment used under tasks and under task(id:)',
    query: `query F($id: ID!) { tasks(first: 6) { ...Page } task(id: $id) { ...T } }
      fragment Page on TaskConnection { edges { ... on TaskEdge { node { ...T } } } }
      fragment T on Task { id ... on Task { outputs { ...O } } recordings { ... on Recording { playUrl } ...R } }
      fragment O on Output { tag format { ...on MediaFormat { container } } streams { kind } }
      fragment R on Recording { fileName receivedAt }`,
    variables: { id: toGlobalId('Task', 'TESTING', 'jt-a') },
    textParts: 2,
  },
  {
    name: '@skip and @include with variables on the parts, literals inside them',
    query: `query S($no: Boolean!, $yes: Boolean!) { tasks(first: 8) { edges { node { id
      outputs @include(if: $yes) { tag width @skip(if: true) height @include(if: true) }
      recordings @skip(if: $no) { playUrl }
      thumbnails @include(if: $no) { imageUrl } } } } }`,
    variables: { no: false, yes: true },
    textParts: 3,
  },
  {
    name: 'the same, the variables turned round',
    query: `query S($no: Boolean!, $yes: Boolean!) { tasks(first: 8) { edges { node { id
      outputs @include(if: $yes) { tag width @skip(if: true) height @include(if: true) }
      recordings @skip(if: $no) { playUrl }
      thumbnails @include(if: $no) { imageUrl } } } } }`,
    variables: { no: true, yes: false },
    textParts: 3,
  },
  {
    name: 'shapes left to the object path: a variable inside a part, a part asked twice, an output id and its task',
    query: `query V($v: Boolean!) { tasks(first: 5) { edges { node {
      outputs { tag @include(if: $v) index }
      recordings { playUrl } recordings { fileName }
      thumbnails { imageUrl }
      o2: outputs { id task { taskId } } } } } }`,
    variables: { v: true },
    textParts: 1,
  },
  {
    name: 'an error beside the parts',
    query: `{ tasks(first: 5) { edges { node { outputs { tag } } } } task(id: "not-an-id") { id } }`,
    textParts: 1,
  },
  {
    name: "recordings from the catalogue: the list's fields as text, id and seenIn the object way",
    query: `{ tasks(first: 12) { edges { node { taskId
      recordings { serviceCode fileName taskId userName views likes description location createdAt firstSeenAt
        receivedAt }
      outputs { tag recordings { fileName outputIndex views firstSeenAt } }
      again: recordings { id seenIn task { taskId } } } } } }`,
    textParts: 2,
  },
  { name: 'a refused variable', query: TASK_PAGE_QUERY, variables: { first: 'many' }, textParts: 4 },
]

// Two API keys: every service code, and TESTING only (a task of the same hashed_id under
// ROTATING has notifications the scoped key must not see, on either path).
const ALL_KEY = 'json-text-all-codes-key-0123456789'
const TESTING_KEY = 'json-text-testing-only-key-0123456789'

async function post(url: string, body: unknown, key = ALL_KEY): Promise<{ status: number; text: string }> {
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` }
  const response = await fetch(new URL('/graphql', url), { method: 'POST', headers, body: JSON.stringify(body) })
  return { status: response.status, text: await response.text() }
}

/** One query over a real graphql-ws socket: the `next` message's payload, as the socket wrote it. */
async function overSocket(
  url: string,
  body: { query: string; variables?: Record<string, unknown> | undefined },
): Promise<string> {
  const socket = new WebSocket(`${url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws')
  try {
    return await new Promise<string>((resolve, reject) => {
      socket.on('open', () =>
        socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${ALL_KEY}` } })),
      )
      socket.on('error', reject)
      socket.on('message', (data) => {
        const message = JSON.parse(String(data))
        if (message.type === 'connection_ack')
          socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: body }))
        else if (message.type === 'next') resolve(JSON.stringify(message.payload))
        else if (message.type === 'error') resolve(JSON.stringify({ errors: message.payload }))
      })
    })
  } finally {
    socket.close()
  }
}

describe(`task page parts as JSON text answer as the object path does (${driverName})`, () => {
  let text: Gateway
  let objects: Gateway
  let db: TestDatabase | undefined
  const statements: string[] = []

  afterAll(async () => {
    await text?.close()
    await objects?.close()
    await db?.drop()
  })

  test('the rewrite takes the shapes it supports and leaves the others', async () => {
    const execution = jsonTextExecution(await buildGraphqlSchema())
    if (!execution) throw new Error('no JSON text execution for the schema')
    for (const operation of OPERATIONS) {
      const rewritten = execution.rewrite(parse(operation.query), undefined)
      const placeholders = rewritten ? (print(rewritten).match(/_livegateJsonText\(part: \d+\)/g) ?? []).length : 0
      expect(placeholders, operation.name).toBe(operation.textParts)
    }
    // Mutations and subscriptions are never rewritten.
    expect(execution.rewrite(parse('subscription { taskChanged { task { outputs { tag } } } }'), undefined)).toBeNull()
  })

  test('every operation: the same bytes both ways, over HTTP and over graphql-ws', async () => {
    // A database of its own, whose statements are seen: the text path must be the one taken.
    db = await openTestDatabase({ logger: { logQuery: (query) => statements.push(query) } })
    await seedTasks(db.database, 12)
    const config = loadConfig({
      env: {},
      value: {
        ...TEST_CONFIG,
        apiKeys: [
          { name: 'all', key: ALL_KEY, serviceCodes: ['*'] },
          { name: 'testing', key: TESTING_KEY, serviceCodes: ['TESTING'] },
        ],
      },
    })
    text = await startGateway(config, { database: db.database, jsonText: true })
    objects = await startGateway(config, { database: db.database, jsonText: false })
    for (const [task, code] of [
      ['jt-a', 'TESTING'],
      ['jt-b', 'TESTING'],
      ['jt-a', 'ROTATING'],
    ] as const) {
      for (const fields of Object.values(sampleCallbacks(task, code)))
        expect((await deliverTo(text, fields)).status).toBe(200)
    }
    // The catalogue: jt-a's file also listed (one recording, seen both ways), and a file only listed, linked by its
    // name.
    const file = {
      createdAt: new Date('2026-01-02T03:04:05Z'),
      duration: 61.5,
      width: 1280,
      height: 720,
      userName: null,
    }
    const more = { description: 'a replay', url: 'http://vod.example/x.mp4', location: 'Lyon', views: 12, likes: 3 }
    await upsertListedFiles(
      db.database.db,
      'TESTING',
      [
        { fileName: 'jt-a.mp4', ...file, ...more },
        { fileName: 'jt-b.flv', ...file, ...more, views: 2_000_000 },
      ],
      new Date(),
    )
    // The page's one statement reads every part as text (`json0` to `json3`) on the text path only.
    for (const [gateway, texts] of [
      [text, 4],
      [objects, 0],
    ] as const) {
      statements.length = 0
      expect((await post(gateway.url, { query: TASK_PAGE_QUERY, variables: { first: 20 } })).status).toBe(200)
      const page = statements.find((statement) => statement.includes('"sortAtMs"'))
      expect(page, 'the page statement').toBeDefined()
      expect(page?.match(/as "json\d"/g)?.length ?? 0).toBe(texts)
    }
    for (const operation of OPERATIONS) {
      const body = { query: operation.query, variables: operation.variables }
      const expected = await post(objects.url, body)
      for (let run = 0; run < 3; run++) {
        const [fromObjects, fromText] = [await post(objects.url, body), await post(text.url, body)]
        expect(fromObjects, `${operation.name}: the object path, run ${run}`).toEqual(expected)
        expect(fromText, `${operation.name}: the text path, run ${run}`).toEqual(expected)
      }
      const [socketObjects, socketText] = [await overSocket(objects.url, body), await overSocket(text.url, body)]
      expect(socketText, `${operation.name} over graphql-ws`).toBe(socketObjects)
      // Apollo writes `errors` before `data`, graphql-ws the other way round.
      if (expected.status === 200)
        expect(JSON.parse(socketObjects), `${operation.name}: graphql-ws as HTTP`).toEqual(JSON.parse(expected.text))
    }
    // A task's recordings are the catalogue's: jt-b's type 2 file, and the one only listed.
    const jtB = {
      query:
        '{ tasks(filter: { serviceCode: "TESTING", taskIds: ["jt-b"] }) { edges { node { recordings { fileName ' +
        'views } } } } }',
    }
    expect(JSON.parse((await post(text.url, jtB)).text).data.tasks.edges[0].node.recordings).toEqual([
      { fileName: 'jt-b.mp4', views: null },
      { fileName: 'jt-b.flv', views: 2_000_000 },
    ])
    // The tenant scope: the same on both paths, and no notification of another service code.
    const scoped = {
      query:
        '{ tasks(first: 50) { edges { node { serviceCode taskId notifications(first: 9) { edges { node { ' +
        'serviceCode taskId } } } } } } }',
    }
    const scopedObjects = await post(objects.url, scoped, TESTING_KEY)
    for (let run = 0; run < 3; run++)
      expect(await post(text.url, scoped, TESTING_KEY), `the scoped key, run ${run}`).toEqual(scopedObjects)
    const scopedCodes = new Set(scopedObjects.text.match(/"serviceCode":"[A-Z]+"/g))
    expect([...scopedCodes]).toEqual(['"serviceCode":"TESTING"'])
    expect((await post(text.url, scoped)).text).toContain('"serviceCode":"ROTATING"')
    // The data reached what the text path writes: outputs, streams, recordings, thumbnails.
    const page = JSON.parse((await post(text.url, { query: TASK_PAGE_QUERY, variables: { first: 20 } })).text)
    const nodes = page.data.tasks.edges.map((edge: { node: Record<string, unknown[]> }) => edge.node)
    expect(
      nodes.some(
        (node: Record<string, unknown[]>) => (node.recordings?.length ?? 0) > 0 && (node.thumbnails?.length ?? 0) > 0,
      ),
    ).toBe(true)
    expect(
      nodes.some((node: { outputs: Array<{ streams: unknown[] }> }) =>
        node.outputs.some((output) => output.streams.length > 0),
      ),
    ).toBe(true)
    // Then a task with values the object path refuses (an Int past 32 bits), and a format no container names.
    const odd = taskListOf(1)
    const listed = odd.task_list[0] as (typeof odd.task_list)[number]
    const first = listed.outputs?.[0] as NonNullable<typeof listed.outputs>[number]
    Object.assign(listed, { id: 'odd-task' })
    Object.assign(first, { width: 3_000_000_000, format: 'webm' })
    await db.database.db.transaction((tx) =>
      applyToGraph(tx as unknown as Db, [taskListEvidence(SEED_SERVICE_CODE, odd, new Date())], new Date()),
    )

    for (const query of [
      TASK_PAGE_QUERY,
      '{ tasks(first: 50) { edges { node { taskId outputs { width format { container } } } } } }',
    ]) {
      const body = { query, variables: { first: 30 } }
      const expected = await post(objects.url, body)
      expect(expected.text).toContain('Int cannot represent')
      for (let run = 0; run < 3; run++)
        expect(await post(text.url, body), `a refused value, run ${run}`).toEqual(expected)
    }
  })
})
