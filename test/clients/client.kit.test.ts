import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { buildSchema, isAbstractType, isObjectType } from 'graphql'
import { describe, expect, it } from 'vitest'
import { keyFields, possibleTypes } from '../../schema/possible-types.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const committed = (file: string) => readFileSync(join(root, file), 'utf8')
const run = promisify(execFile)
const EMIT = 'run `npm run schema:emit` and commit schema/'

// Each is made by a real process, as `npm run schema:emit` makes it (see graphql.schema.test.ts
// for why the schema is not printed inside vitest).
describe('the client kit committed under schema/', () => {
  it('schema/possible-types.ts is what `livegate schema possible-types` prints from the code', async () => {
    const { stdout, stderr } = await run(
      process.execPath,
      ['--import', 'tsx', join(root, 'src/main.ts'), 'schema', 'possible-types'],
      {
        cwd: root,
        env: { ...process.env, LIVEGATE_CONFIG: '' },
      },
    )
    expect(stderr).toBe('')
    expect(stdout, EMIT).toBe(`${committed('schema/possible-types.ts')}`)
  }, 180_000)

  it(
    'names every abstract type with its members, and a key (or ' +
      'none) for every object type of schema/schema.graphql',
    () => {
      const schema = buildSchema(committed('schema/schema.graphql'))
      const roots = new Set(['Query', 'Mutation', 'Subscription'])
      for (const type of Object.values(schema.getTypeMap())) {
        if (type.name.startsWith('__')) continue
        if (isAbstractType(type))
          // A set to Apollo Client: the generator's order (by localeCompare) is not what is compared.
          expect([...(possibleTypes[type.name] ?? [])].sort(), type.name).toEqual(
            schema
              .getPossibleTypes(type)
              .map((member) => member.name)
              .sort(),
          )
        if (isObjectType(type) && !roots.has(type.name))
          expect(keyFields[type.name], type.name).toEqual('id' in type.getFields() ? ['id'] : null)
      }
      expect(possibleTypes.Notification?.length).toBeGreaterThan(5)
      expect(keyFields.Task).toEqual(['id'])
    },
  )

  it('schema/client/operations.ts is what graphql-codegen generates from schema/operations.graphql', async () => {
    const codegen = join(root, 'node_modules/@graphql-codegen/cli/cjs/bin.js')
    // `--check` exits 1, naming the stale files, when the output would change.
    const failure = await run(process.execPath, [codegen, '--config', 'schema/codegen.ts', '--check'], {
      cwd: root,
    }).then(
      () => null,
      (error: { code?: number; stdout?: string; stderr?: string }) =>
        `exit ${error.code}: ${error.stdout}${error.stderr}`,
    )
    expect(failure, 'run `npm run codegen` and commit schema/client/').toBeNull()
  }, 180_000)
})
