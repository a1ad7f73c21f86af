import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import {
  type IntrospectionQuery,
  Kind,
  buildClientSchema,
  buildSchema,
  getIntrospectionQuery,
  lexicographicSortSchema,
  parse,
  printSchema,
  validate,
} from 'graphql'
import { describe, expect } from 'vitest'
import { test } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const committed = (file: string) => readFileSync(join(root, file), 'utf8')
const EMIT = 'run `npm run schema:emit` and commit schema/schema.graphql'

// The schema is built and printed in a real livegate process, as `npm run schema:emit` does:
// under vitest, `graphql` resolves to its ESM copy while type-graphql loads the CommonJS one,
// and a schema cannot be printed across the two.
describe('the GraphQL contract files', () => {
  test('schema/schema.graphql is what `livegate schema` prints from the code', async () => {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', join(root, 'src/main.ts'), 'schema'],
      {
        cwd: root,
        env: { ...process.env, LIVEGATE_CONFIG: '' },
      },
    )
    expect(stderr).toBe('')
    expect(stdout, EMIT).toBe(committed('schema/schema.graphql'))
  }, 300_000)

  test('schema/subgraph.graphql is what `livegate schema subgraph` prints from the code', async () => {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', join(root, 'src/main.ts'), 'schema', 'subgraph'],
      {
        cwd: root,
        env: { ...process.env, LIVEGATE_CONFIG: '' },
      },
    )
    expect(stderr).toBe('')
    expect(stdout, 'run `npm run schema:emit` and commit schema/subgraph.graphql').toBe(
      committed('schema/subgraph.graphql'),
    )
  }, 300_000)

  test('schema/schema.graphql is the schema /graphql serves', async ({ gateway }) => {
    const answer = await graphql<IntrospectionQuery>(
      gateway,
      getIntrospectionQuery({ descriptions: true, specifiedByUrl: true }),
    )
    expect(answer.errors, answer.text).toBeUndefined()
    const served = printSchema(lexicographicSortSchema(buildClientSchema(answer.data as IntrospectionQuery)))
    expect(`${served}\n`, EMIT).toBe(committed('schema/schema.graphql'))
  })

  test('every operation in schema/operations.graphql is named and valid against schema/schema.graphql', () => {
    const schema = buildSchema(committed('schema/schema.graphql'))
    const document = parse(committed('schema/operations.graphql'))
    expect(validate(schema, document).map((error) => error.message)).toEqual([])
    const operations = document.definitions.filter((definition) => definition.kind === Kind.OPERATION_DEFINITION)
    expect(operations.length).toBeGreaterThan(0)
    for (const operation of operations) expect(operation.name?.value).toMatch(/^[A-Z]\w+$/)
  })
})
