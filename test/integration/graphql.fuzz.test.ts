import fc from 'fast-check'
import { describe, expect } from 'vitest'
import { type CatalogueCode, errorCatalogue } from '../../src/model/error.catalogue.js'
import { driverName } from '../support/database.fixture.js'
import { send, test } from '../support/gateway.fixture.js'

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

describe(`the GraphQL edge never answers 5xx, whatever it is sent (${driverName})`, () => {
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
