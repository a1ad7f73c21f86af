import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import type { z } from 'zod'
import { configFileSchema } from '../../src/config/index.js'

// The README's settings table and the configuration schema name the same keys: a setting added
// to the schema without a row, or a row naming a key the schema refuses, fails here.

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')

/** Every key path of a schema (`ingest.bodyLimit`, `services[].verify`), interior ones included. */
function keyPaths(schema: z.ZodType, prefix = ''): string[] {
  const def = (schema as unknown as { def: { type: string; innerType?: z.ZodType; element?: z.ZodType; in?: z.ZodType; shape?: Record<string, z.ZodType> } }).def
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

/** The keys the README's settings table names, each cell's backquoted keys. */
function readmeKeys(): string[] {
  const lines = README.split('\n')
  const start = lines.findIndex((line) => line.startsWith('| key | default | meaning |'))
  expect(start, 'README has the settings table').toBeGreaterThanOrEqual(0)
  const keys: string[] = []
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break
    const cell = line.split('|')[1] ?? ''
    keys.push(...[...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1] as string))
  }
  return keys
}

describe("the README's settings table", () => {
  const schemaKeys = keyPaths(configFileSchema as unknown as z.ZodType)
  const documented = readmeKeys()

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
    const groups = new Set(schemaKeys.filter((key) => schemaKeys.some((other) => other.startsWith(`${key}.`) || other.startsWith(`${key}[].`))))
    const undocumented = schemaKeys.filter((key) => !groups.has(key) && !documented.some((doc) => key === doc || key.startsWith(`${doc}.`) || key.startsWith(`${doc}[]`)))
    expect(undocumented).toEqual([])
  })
})
