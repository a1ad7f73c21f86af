import { describe, expect } from 'vitest'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName } from '../support/database.fixture.js'
import { test } from '../support/gateway.fixture.js'

/**
 * The gateway runs an operation with graphql-js the first time and compiled by graphql-jit from
 * the second (src/adapters/graphql/jit.executor.ts): every answer must be the same, byte for byte, either
 * way: data, custom scalars, abstract types, and the errors and HTTP statuses of each kind.
 */

const NOTIFICATION_FIELDS = `
  __typename id kind type serviceCode vsId taskId userName receivedAt deliveries signatureVerified fields cursor task
    { id } user { id userName }
  ... on LiveStartNotification { playUrl timeShiftUrl width height createdAt duration format { container containerName
    videoCodec audioCodec } tag isResume opaque liveOnly clientType clientVersion }
  ... on LiveEndNotification { reachEnd outputIndex inputBytes httpOutputBytes }
  ... on ArchivedNotification { playUrl fileName width height duration outputIndex }
  ... on ThumbnailNotification { imageUrl width height fileName }
  ... on ClientDisconnectNotification { sessionDuration disconnectReason disconnectReasonCode }
  ... on LiveResumeNotification { status }`

const TASK_PAGE = `query Page($first: Int, $after: String, $filter: TaskFilter, $perTask: Int) {
  tasks(first: $first, after: $after, filter: $filter) {
    totalCount
    pageInfo { hasNextPage endCursor }
    edges { cursor node {
      id taskId serviceCode vsId userName status endReason isResume liveOnly opaque startedAt endedAt listed inputBytes
      user { id userName }
      outputs { id index tag playUrl timeShiftUrl startedAt endedAt format { container videoCodec audioCodec } streams
        { kind bitRate } recordings { playUrl receivedAt } task { id } }
      recordings { outputIndex tag playUrl fileName duration inputBytes httpOutputBytes createdAt receivedAt }
      thumbnails { imageUrl width height receivedAt }
      resumes { status sentAt }
      notifications(first: $perTask) { totalCount pageInfo { hasNextPage endCursor } edges { cursor node {
        ${NOTIFICATION_FIELDS} } } }
    } }
  }
}`

/** The page's size and count alone, at the same place in the document as TASK_PAGE's. */
const SMALL_PAGE = `query Page($first: Int) {
  tasks(first: $first) { totalCount }
}`

interface Sent {
  status: number
  contentType: string | null
  cacheControl: string | null
  text: string
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Sent> {
  const response = await fetch(new URL('/graphql', url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    cacheControl: response.headers.get('cache-control'),
    text: await response.text(),
  }
}

/** The same request four times: the first runs on graphql-js, the later ones compiled. */
async function everyRun(url: string, body: unknown): Promise<Sent> {
  const answers = [] as Sent[]
  for (let run = 0; run < 4; run++) answers.push(await post(url, body))
  for (const answer of answers.slice(1)) expect(answer).toEqual(answers[0])
  return answers[0] as Sent
}

describe(`compiled execution answers as graphql-js does (${driverName})`, () => {
  test('a task page with every kind of notification, scalar and enum', async ({ gateway, deliver }) => {
    for (const task of ['jit-a', 'jit-b']) {
      for (const fields of Object.values(sampleCallbacks(task))) expect((await deliver(fields)).status).toBe(200)
    }
    // A type livegate does not know, and a value too large for Int, which reads as null.
    expect((await deliver({ type: '77', service_code: 'TESTING', hashed_id: 'jit-a', extra: 'x' })).status).toBe(200)
    const answer = await everyRun(gateway.url, { query: TASK_PAGE, variables: { first: 5, perTask: 20 } })
    expect(answer.status).toBe(200)
    expect(answer.cacheControl).toBe('no-store')
    const body = JSON.parse(answer.text)
    expect(body.errors).toBeUndefined()
    expect(body.data.tasks.edges).toHaveLength(2)
    const types = body.data.tasks.edges.flatMap((edge: any) =>
      edge.node.notifications.edges.map((n: any) => n.node.__typename),
    )
    expect(new Set(types)).toEqual(
      new Set([
        'LiveStartNotification',
        'LiveEndNotification',
        'ArchivedNotification',
        'ThumbnailNotification',
        'LiveResumeNotification',
        'UnknownNotification',
      ]),
    )
    // Another page by cursor, and a filter, on the same compiled operation.
    const next = await everyRun(gateway.url, {
      query: TASK_PAGE,
      variables: { first: 1, after: body.data.tasks.edges[0].cursor, filter: { status: ['ENDED'] } },
    })
    expect(JSON.parse(next.text).errors).toBeUndefined()
    // Node is abstract too: every kind of node by id, compiled as interpreted.
    const task = body.data.tasks.edges[0].node
    const ids = [
      task.id,
      task.user.id,
      task.outputs[0].id,
      ...task.notifications.edges.map((edge: any) => edge.node.id),
    ]
    const NODES =
      `query($ids: [ID!]!) { nodes(ids: $ids) { __typename id ... on Task { taskId } ... on User { userName ` +
      `tasks(first: 2) { totalCount edges { node { id } } } } ... on Output { tag } ... on Notification { kind ` +
      `cursor } } }`
    const nodes = JSON.parse((await everyRun(gateway.url, { query: NODES, variables: { ids } })).text)
    expect(nodes.errors).toBeUndefined()
    expect(nodes.data.nodes.map((node: { id: string }) => node.id)).toEqual(ids)
    expect(nodes.data.nodes.slice(0, 3).map((node: { __typename: string }) => node.__typename)).toEqual([
      'Task',
      'User',
      'Output',
    ])

    // Thirteen deliveries and four runs each of three large operations: room for a busy machine.
  }, 120_000)

  test('errors a resolver raises keep their message, path, locations and code', async ({ gateway }) => {
    // A page of 501 whole tasks is refused by its cost before a resolver runs; the page's size alone
    // reaches the resolver's own limit.
    const tooMany = await everyRun(gateway.url, { query: SMALL_PAGE, variables: { first: 501 } })
    expect(tooMany.status).toBe(200)
    const body = JSON.parse(tooMany.text)
    expect(body.data).toBeNull()
    expect(body.errors).toEqual([
      expect.objectContaining({
        path: ['tasks'],
        locations: [{ line: 2, column: 3 }],
        extensions: expect.objectContaining({ code: 'BAD_USER_INPUT' }),
      }),
    ])
    const badCursor = await everyRun(gateway.url, { query: TASK_PAGE, variables: { first: 1, after: 'nope' } })
    expect(JSON.parse(badCursor.text).errors[0].extensions.code).toBe('BAD_USER_INPUT')
    const nul = await everyRun(gateway.url, {
      query: TASK_PAGE,
      variables: { first: 1, perTask: 1, filter: { userName: 'a\u0000b' } },
    })
    expect(JSON.parse(nul.text).errors[0].extensions).toEqual({ code: 'BAD_USER_INPUT', argumentName: 'filter' })
  })

  test('a variable of the wrong type is a 400 BAD_USER_INPUT, compiled or not', async ({ gateway }) => {
    await everyRun(gateway.url, { query: TASK_PAGE, variables: { first: 2 } })
    const answer = await everyRun(gateway.url, { query: TASK_PAGE, variables: { first: 'many' } })
    expect(answer.status).toBe(400)
    const body = JSON.parse(answer.text)
    expect(body.errors[0].message).toMatch(/^Variable "\$first" got invalid value "many"/)
    expect(body.errors[0].extensions.code).toBe('BAD_USER_INPUT')
    const enumValue = await everyRun(gateway.url, { query: TASK_PAGE, variables: { filter: { status: ['NAPPING'] } } })
    expect(enumValue.status).toBe(400)
  })

  test('limits judge each request by its own variables, however often the document ran', async ({ gateway }) => {
    const cheap = await everyRun(gateway.url, { query: TASK_PAGE, variables: { first: 10, perTask: 10 } })
    expect(JSON.parse(cheap.text).errors).toBeUndefined()
    const costly = await everyRun(gateway.url, { query: TASK_PAGE, variables: { first: 500, perTask: 500 } })
    expect(costly.status).toBe(400)
    expect(JSON.parse(costly.text).errors[0].extensions.code).toBe('QUERY_TOO_COSTLY')
    // And the cheap one still passes after the refusal.
    expect(
      JSON.parse((await post(gateway.url, { query: TASK_PAGE, variables: { first: 10, perTask: 10 } })).text).errors,
    ).toBeUndefined()
  })

  test('introspection and operations picked by name run the same every time', async ({ gateway }) => {
    const introspection = await everyRun(gateway.url, {
      query: '{ __schema { queryType { name } types { name kind } } }',
    })
    expect(JSON.parse(introspection.text).data.__schema.queryType.name).toBe('Query')
    const two =
      'query A { tasks(first: 1) { totalCount } } query B { upstream(serviceCode: "TESTING") { serviceCode } ' +
      'notifications(first: 2) { edges { node { __typename type } } } }'
    const a = await everyRun(gateway.url, { query: two, operationName: 'A' })
    const b = await everyRun(gateway.url, { query: two, operationName: 'B' })
    expect(Object.keys(JSON.parse(a.text).data)).toEqual(['tasks'])
    expect(Object.keys(JSON.parse(b.text).data)).toEqual(['upstream', 'notifications'])
    const neither = await everyRun(gateway.url, { query: two })
    expect(neither.status).toBe(400)
  })

  test('an empty operation name names no operation, even after the unnamed one was compiled', async ({ gateway }) => {
    const query = 'query($n: Int) { tasks(first: $n) { totalCount } }'
    expect((await everyRun(gateway.url, { query, variables: null })).status).toBe(200)
    const empty = await everyRun(gateway.url, { query, operationName: '', variables: null })
    expect(empty.status).toBe(400)
    expect(JSON.parse(empty.text).errors[0].extensions.code).toBe('OPERATION_RESOLUTION_FAILURE')
  })
})
