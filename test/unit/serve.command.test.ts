import { describe, expect, it } from 'vitest'
import { workerCount } from '../../src/adapters/cli/serve.command.js'

const server = { url: 'postgres://db/livegate', dataDir: './data' }
const pglite = { dataDir: './data' }

describe('how many workers serve runs', () => {
  it('is one per core on a PostgreSQL server unless told, and what it is told', () => {
    expect(workerCount([], { database: server }, 8)).toBe(8)
    expect(workerCount([], { database: server, workers: 3 }, 8)).toBe(3)
    expect(workerCount(['--workers', '2'], { database: server, workers: 3 }, 8)).toBe(2)
    expect(workerCount(['--workers=1'], { database: server }, 8)).toBe(1)
  })

  it('is one on PGlite, and more is refused naming where it was asked', () => {
    expect(workerCount([], { database: pglite }, 8)).toBe(1)
    expect(workerCount(['--workers', '1'], { database: pglite }, 8)).toBe(1)
    expect(() => workerCount(['--workers', '2'], { database: pglite }, 8)).toThrow(
      /^--workers 2: the embedded PGlite database allows one connection/,
    )
    expect(() => workerCount([], { database: pglite, workers: 4 }, 8)).toThrow(/^workers 4: the embedded PGlite/)
  })

  it('refuses a count that is not a whole number from 1 to 256', () => {
    for (const bad of ['0', '-1', 'x', '1.5', '257', '']) {
      expect(() => workerCount(['--workers', bad], { database: server }, 8)).toThrow(/^--workers: /)
    }
  })
})
