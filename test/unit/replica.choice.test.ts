import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { chooseRead, type ReplicaReading, walLocation } from '../../src/fold/replica.choice.js'

const reading = fc.record({
  name: fc.string({ minLength: 1, maxLength: 4 }),
  answering: fc.boolean(),
  lagMs: fc.integer({ min: 0, max: 10_000 }),
  replayed: fc.option(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), { nil: undefined }),
}) satisfies fc.Arbitrary<ReplicaReading>

describe('chooseRead: which database serves a read', () => {
  it('never a replica behind the position the read names, beyond the lag, or not answering', () => {
    fc.assert(
      fc.property(
        fc.array(reading, { maxLength: 6 }),
        fc.integer({ min: 0, max: 10_000 }),
        fc.option(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), { nil: undefined }),
        (readings, maxLagMs, atLeast) => {
          const choice = chooseRead(readings, maxLagMs, atLeast)
          const fit = readings.filter(
            (r) =>
              r.answering &&
              r.lagMs <= maxLagMs &&
              (atLeast === undefined || (r.replayed !== undefined && r.replayed >= atLeast)),
          )
          if (choice.target === 'primary') {
            expect(fit).toEqual([])
            return
          }
          const chosen = readings.find((r) => r.name === choice.name && r.lagMs === choice.lagMs && fit.includes(r))
          expect(chosen).toBeDefined()
          // The least behind of those that may serve.
          expect(choice.lagMs).toBe(Math.min(...fit.map((r) => r.lagMs)))
        },
      ),
      { numRuns: 2000 },
    )
  })

  it('reads WAL locations as PostgreSQL writes them, in their order', () => {
    expect(walLocation('0/16B3748')).toBe(0x16b3748n)
    expect(walLocation('16/B374D848')).toBe((0x16n << 32n) | 0xb374d848n)
    expect((walLocation('1/0') as bigint) > (walLocation('0/FFFFFFFF') as bigint)).toBe(true)
    for (const bad of ['', '0', '0/', 'x/1', '1/2/3', '123456789/0']) expect(walLocation(bad)).toBeUndefined()
  })
})
