import { execFile } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../..', import.meta.url))
const run = promisify(execFile)

describe('committed contracts', () => {
  it('schema/migrations/ holds a migration for every change to the tables', async () => {
    // drizzle-kit takes --out relative to the working directory (it prefixes "./"), so the copy
    // lives under node_modules/.cache; it also exits 0 on failure, hence the stderr check.
    mkdirSync(join(root, 'node_modules/.cache'), { recursive: true })
    const out = relative(root, mkdtempSync(join(root, 'node_modules/.cache/livegate-drift-')))
    try {
      cpSync(join(root, 'schema/migrations'), join(root, out), { recursive: true })
      const before = readdirSync(join(root, out)).sort()
      const { stderr } = await run(
        join(root, 'node_modules/.bin/drizzle-kit'),
        ['generate', '--dialect=postgresql', '--schema=./src/storage/tables/*.table.ts', `--out=${out}`],
        { cwd: root },
      )
      expect(stderr).not.toMatch(/error/i)
      // drizzle-kit writes a new numbered migration only when the tables differ from the snapshots.
      expect(readdirSync(join(root, out)).sort(), 'run `npm run db:generate` and commit schema/migrations/').toEqual(
        before,
      )
    } finally {
      rmSync(join(root, out), { recursive: true, force: true })
    }
  }, 300_000)
})
