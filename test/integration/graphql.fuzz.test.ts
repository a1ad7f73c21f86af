import fc from 'fast-check'
import { describe, expect } from 'vitest'
import { type CatalogueCode, errorCatalogue } from '../../src/model/error.catalogue.js'
import { base64url } from '../../src/adapters/graphql/global.id.js'
import { driverName } from '../support/database.fixture.js'
import { send, test } from '../support/gateway.fixture.js'
import { overSocket } from '../support/socket.execute.js'

// Operations that take variables of every kind the schema has, fed arbitrary values.
const OPERATIONS = [
  'query($f: TaskFilter, $n: Int, $a: String) { tasks(filter: $f, first: $n, after: $a) { totalCount edges { ' +
    'cursor node { id status outputs { tag } notifications(first: $n) { totalCount } } } pageInfo { endCursor } } }',
  'query($f: NotificationFilter, $n: Int, $a: String) { notifications(filter: $f, first: $n, after: $a) { ' +
    'totalCount edges { node { __typename id fields } } } }',
  'query($f: UserFilter, $n: Int, $a: String) { users(filter: $f, first: $n, after: $a) { totalCount edges { ' +
    'node { userName online } } } }',
  'query($id: ID!) { task(id: $id) { id status notifications { totalCount } } }',
  'query($id: ID!, $ids: [ID!]!) { node(id: $id) { __typename id } nodes(ids: $ids) { __typename id } }',
  'query($f: TaskFilter) { taskCounts(filter: $f) { serviceCode total viewers outputBytes } }',
  'query($f: UserFilter, $g: TaskFilter, $n: Int, $a: String) { users(filter: $f, first: $n) { edges { node { id ' +
    'tasks(filter: $g, first: $n, after: $a) { totalCount } } } } }',
  'query($s: String!) { upstream(serviceCode: $s) { configured healthy lastError { kind ret } } }',
  'query($f: RecordingFilter, $n: Int, $a: String) { recordings(filter: $f, first: $n, after: $a) { totalCount ' +
    'edges { cursor node { id fileName } } } }',
  'query($f: IncidentFilter, $n: Int, $a: String) { incidents(filter: $f, first: $n, after: $a) { totalCount ' +
    'edges { node { id rule } } } }',
]

const text = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary', maxLength: 40 }),
  // Cursors, and global ids well formed and not: of a task, a notification, a row id past 2^53, a bad key.
  fc.constantFrom(
    '\u0000',
    'TESTING',
    'n1:1',
    'bjE6MQ',
    '',
    'VGFzazpbIlRFU1RJTkciLCJ4Il0',
    'Tm90aWZpY2F0aW9uOlsiMSJd',
    'Tm90aWZpY2F0aW9uOlsiOTk5OTk5OTk5OTk5OTk5OTk5Il0',
    'VGFzazpbMSwyXQ',
    base64url('r1:999999999999999:1'),
    base64url('t1:999999999999999:1'),
    '0000-01-01T00:00:00Z',
    '+010000-01-01T00:00:00Z',
  ),
)
const scalar = fc.oneof(
  text,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom(2 ** 31, -1, 0, 1e308, '2026-01-01T00:00:00Z', 'yesterday'),
)
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  any: fc.oneof(
    { depthSize: 'small' },
    scalar,
    fc.array(tie('any'), { maxLength: 3 }),
    fc.dictionary(
      fc.constantFrom(
        'serviceCode',
        'status',
        'ids',
        'taskIds',
        'userIds',
        'vsId',
        'kinds',
        'types',
        'userName',
        'online',
        'startedFrom',
        'receivedTo',
        'createdAfter',
        'createdBefore',
        'rule',
        'x',
      ),
      tie('any'),
      { maxKeys: 4 },
    ),
  ),
})).any

const answeredWell = (status: number, body: string) => {
  expect(status, body).toBeLessThan(500)
  expect(body).not.toMatch(/\n\s+at .+:\d+:\d+/)
  const parsed = JSON.parse(body) as { data?: unknown; errors?: Array<{ extensions?: { code?: string } }> }
  expect(parsed.data !== undefined || (parsed.errors?.length ?? 0) > 0).toBe(true)
  for (const error of parsed.errors ?? [])
    expect(errorCatalogue[error.extensions?.code as CatalogueCode]?.on, body).toBe('graphql')
}

// Values of the right GraphQL type that no stored row can hold or be compared with: a time outside
// the years 1 to 9999, a forged cursor past them, NUL in text. Each is the caller's mistake.
const OUT_OF_REACH: Array<[string, string, Record<string, unknown>]> = [
  [
    'createdAfter in year 0',
    'query($f: RecordingFilter) { recordings(filter: $f) { totalCount edges { cursor } } }',
    {
      f: { createdAfter: '0000-01-01T00:00:00Z' },
    },
  ],
  [
    'createdBefore in year 0',
    'query($f: RecordingFilter) { recordings(filter: $f) { edges { cursor } } }',
    {
      f: { createdBefore: '0000-06-01T00:00:00Z' },
    },
  ],
  [
    'a recordings cursor past 9999',
    'query($a: String) { recordings(after: $a) { edges { cursor } } }',
    {
      a: base64url('r1:999999999999999:1'),
    },
  ],
  [
    'a tasks cursor past 9999',
    'query($a: String) { tasks(after: $a) { edges { cursor } } }',
    {
      a: base64url('t1:999999999999999:1'),
    },
  ],
  [
    'NUL in IncidentFilter.serviceCode',
    'query($f: IncidentFilter) { incidents(filter: $f) { totalCount } }',
    {
      f: { serviceCode: 'TEST\u0000ING' },
    },
  ],
  [
    'NUL in IncidentFilter.rule',
    'query($f: IncidentFilter) { incidents(filter: $f) { edges { node { id } } } }',
    {
      f: { rule: 'thin\u0000' },
    },
  ],
  ['NUL in a literal', '{ incidents(filter: { rule: "thin\\u0000" }) { totalCount } }', {}],
  ['a literal time in year 0', '{ recordings(filter: { createdAfter: "0000-01-01T00:00:00Z" }) { totalCount } }', {}],
]
const REFUSED = ['BAD_USER_INPUT', 'GRAPHQL_VALIDATION_FAILED']

describe(`the GraphQL edge never answers 5xx, whatever it is sent (${driverName})`, () => {
  test.for(OUT_OF_REACH)(
    '%s is refused as bad input, over HTTP and graphql-ws',
    async ([, query, variables], { gateway }) => {
      const answer = await send({
        method: 'POST',
        url: `${gateway.url}/graphql`,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query, variables }),
      })
      answeredWell(answer.status, answer.text)
      const codes = (answer.body.errors as Array<{ extensions: { code: string } }> | undefined)?.map(
        (error) => error.extensions.code,
      )
      expect(codes?.length, answer.text).toBeGreaterThan(0)
      expect(REFUSED, answer.text).toEqual(expect.arrayContaining(codes ?? []))
      const socket = await overSocket(gateway.url, query, variables, 'no-key-configured')
      const socketCodes = socket.errors?.map((error) => error.extensions?.code)
      expect(socketCodes?.length, JSON.stringify(socket)).toBeGreaterThan(0)
      expect(REFUSED, JSON.stringify(socket)).toEqual(expect.arrayContaining(socketCodes ?? []))
    },
  )

  test('known operations with arbitrary variables', async ({ gateway }) => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...OPERATIONS),
        fc.dictionary(fc.constantFrom('f', 'g', 'n', 'a', 'id', 'ids', 's'), value, { maxKeys: 6 }),
        async (query, variables) => {
          const answer = await send({
            method: 'POST',
            url: `${gateway.url}/graphql`,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ query, variables }),
          })
          answeredWell(answer.status, answer.text)
        },
      ),
      { numRuns: 200 },
    )
  })

  test('arbitrary documents, operation names and bodies', async ({ gateway }) => {
    const document = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.constantFrom(...OPERATIONS).chain((op) => fc.nat({ max: op.length }).map((cut) => op.slice(0, cut))),
      fc
        .array(
          fc.constantFrom(
            '{',
            '}',
            'tasks',
            'a:',
            'edges',
            'node',
            '...',
            'on',
            'Task',
            'fragment',
            'f',
            '(',
            ')',
            'first:',
            '1',
            '$x',
            'query',
            'subscription',
            '__schema',
            'types',
          ),
          {
            maxLength: 40,
          },
        )
        .map((parts) => parts.join(' ')),
    )
    await fc.assert(
      fc.asyncProperty(
        document,
        fc.option(fc.string({ maxLength: 20 })),
        fc.option(value),
        async (query, operationName, variables) => {
          const answer = await send({
            method: 'POST',
            url: `${gateway.url}/graphql`,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ query, operationName, variables }),
          })
          answeredWell(answer.status, answer.text)
        },
      ),
      { numRuns: 200 },
    )
  })
})
