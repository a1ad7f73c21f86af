import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { RefusalLimiter, sourceKey } from '../../src/adapters/http/refusal.limiter.js'

describe('the refusal limiter', () => {
  it('records a burst up to the rate, then one more per refilled token', () => {
    const limiter = new RefusalLimiter({ perMinute: 60, trackedSources: 10 })
    const allowed = Array.from({ length: 100 }, () => limiter.allow('10.0.0.1', 0)).filter(Boolean)
    expect(allowed).toHaveLength(60)
    expect(limiter.allow('10.0.0.1', 999)).toBe(false)
    expect(limiter.allow('10.0.0.1', 1000)).toBe(true)
    expect(limiter.allow('10.0.0.1', 1000)).toBe(false)
    // Another source has its own bucket.
    expect(limiter.allow('10.0.0.2', 1000)).toBe(true)
  })

  it('never records more than a burst plus the refill, whatever the timing', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 120 }),
        fc.array(fc.integer({ min: 0, max: 5000 }), { maxLength: 300 }),
        (perMinute, gaps) => {
          const limiter = new RefusalLimiter({ perMinute, trackedSources: 4 })
          let now = 0
          let recorded = 0
          for (const gap of gaps) {
            now += gap
            if (limiter.allow('192.0.2.1', now)) recorded += 1
          }
          expect(recorded).toBeLessThanOrEqual(perMinute + Math.floor((now * perMinute) / 60_000))
        },
      ),
    )
  })

  it('records nothing at a rate of 0, and remembers a bounded number of sources', () => {
    expect(new RefusalLimiter({ perMinute: 0, trackedSources: 10 }).allow('10.0.0.1', 0)).toBe(false)
    const limiter = new RefusalLimiter({ perMinute: 1, trackedSources: 3 })
    for (let host = 0; host < 100; host += 1) limiter.allow(`10.0.1.${host}`, 0)
    expect(limiter.size).toBe(3)
  })

  it('counts an IPv6 source by its /64 and an IPv4-mapped one as IPv4', () => {
    expect(sourceKey('2001:db8:1:2:aaaa::1')).toBe(sourceKey('2001:0db8:0001:0002:ffff:ffff:ffff:ffff'))
    expect(sourceKey('2001:db8:1:2::1')).not.toBe(sourceKey('2001:db8:1:3::1'))
    expect(sourceKey('::1')).toBe('0:0:0:0::/64')
    expect(sourceKey('::ffff:192.0.2.7')).toBe('192.0.2.7')
    expect(sourceKey('192.0.2.7')).toBe('192.0.2.7')
    expect(sourceKey(undefined)).toBe('unknown')
  })
})
