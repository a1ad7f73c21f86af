import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import type { z } from 'zod'
import { configFileSchema } from '../../src/config/index.js'

// The settings tables of docs/configuration.md and the configuration schema name the same keys: a
// setting added to the schema without a row, or a row naming a key the schema refuses, fails here.
// The page groups them by key: each table sits under a heading that names its group.

const PAGE = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8')

/** Every key path of a schema (`ingest.bodyLimit`, `services[].verify`), interior ones included. */
function keyPaths(schema: z.ZodType, prefix = ''): string[] {
  const def = (
    schema as unknown as {
      def: {
        type: string
        innerType?: z.ZodType
        element?: z.ZodType
        in?: z.ZodType
        shape?: Record<string, z.ZodType>
      }
    }
  ).def
  switch (def.type) {
    case 'default':
    case 'optional':
    case 'nullable':
    case 'prefault':
      return keyPaths(def.innerType as z.ZodType, prefix)
    case 'pipe':
      return keyPaths(def.in as z.ZodType, prefix)
    case 'array':
      return keyPaths(def.element as z.ZodType, `${prefix}[]`)
    case 'object':
      return Object.entries(def.shape ?? {}).flatMap(([key, value]) => {
        const path = prefix ? `${prefix}.${key}` : key
        return [path, ...keyPaths(value, path)]
      })
    default:
      return []
  }
}

/** Each settings table's rows, with the group its heading names (`ingest`; '' for the top level). */
function settingsTables(): Array<{ group: string; keys: string[][] }> {
  const lines = PAGE.split('\n')
  const tables: Array<{ group: string; keys: string[][] }> = []
  let group = ''
  for (const [index, line] of lines.entries()) {
    // "### `ingest`" names a group; "### The process: `port`, …" is the top level's.
    if (line.startsWith('### ')) group = line.startsWith('### `') ? (/`([^`]+)`/.exec(line)?.[1] ?? '') : ''
    if (!line.startsWith('| key | default | meaning |')) continue
    const keys: string[][] = []
    for (const row of lines.slice(index + 2)) {
      if (!row.startsWith('|')) break
      const cell = row.split('|')[1] ?? ''
      keys.push([...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1] as string))
    }
    tables.push({ group, keys })
  }
  expect(tables.length, 'docs/configuration.md has settings tables').toBeGreaterThan(0)
  return tables
}

/** The keys the settings tables name, each first cell's backquoted keys. */
const documentedKeys = () => settingsTables().flatMap((table) => table.keys.flat())

describe("docs/configuration.md's settings tables", () => {
  const schemaKeys = keyPaths(configFileSchema as unknown as z.ZodType)
  const documented = documentedKeys()

  it("reads the schema's keys", () => {
    expect(schemaKeys).toContain('ingest.bodyLimit')
    expect(schemaKeys).toContain('services[].verify')
  })

  it('names only keys the configuration schema has', () => {
    const unknown = documented.filter((key) => !schemaKeys.includes(key))
    expect(unknown).toEqual([])
  })

  it('names every key of the schema, or an object or list of keys that holds it', () => {
    // A row about `apiKeys` documents what an API key is made of; a group (`ingest`) is no setting.
    const groups = new Set(
      schemaKeys.filter((key) =>
        schemaKeys.some((other) => other.startsWith(`${key}.`) || other.startsWith(`${key}[].`)),
      ),
    )
    const undocumented = schemaKeys.filter(
      (key) =>
        !groups.has(key) &&
        !documented.some((doc) => key === doc || key.startsWith(`${doc}.`) || key.startsWith(`${doc}[]`)),
    )
    expect(undocumented).toEqual([])
  })

  it('groups each key under the heading of its first part', () => {
    const misplaced = settingsTables().flatMap(({ group, keys }) =>
      keys
        .flat()
        .filter((key) => (group === '' ? /[.[]/.test(key) : key.split(/[.[]/)[0] !== group))
        .map((key) => `${key} under "${group}"`),
    )
    expect(misplaced).toEqual([])
  })
})
