import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { pageScriptFile } from '../../src/adapters/http/playground.plugin.js'

// Run from source, each gateway compiles its pages' scripts into the system's temporary folder.
// Two gateways started at once in one process (as tests and `livegate demo` do) wrote the same
// partial file and the second rename failed with ENOENT.
describe('page scripts compiled from source', () => {
  const previous = process.env.TMPDIR
  const folder = mkdtempSync(join(tmpdir(), 'livegate-pages-test-'))
  process.env.TMPDIR = folder

  afterAll(() => {
    process.env.TMPDIR = previous
    rmSync(folder, { recursive: true, force: true })
  })

  it('are written whole by gateways that start at once in one process', async () => {
    const files = await Promise.all(Array.from({ length: 8 }, () => pageScriptFile('playground/playground.client')))
    expect(new Set(files).size).toBe(1)
    expect(files[0]?.startsWith(folder)).toBe(true)
    expect(readFileSync(files[0] as string, 'utf8')).toContain('graphiql')
  })
})
