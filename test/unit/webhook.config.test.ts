import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig, WEBHOOK_EVENT_TYPES } from '../../src/config/index.js'
import { KIND_ENTRIES } from '../../src/model/callback.kinds.js'
import {
  callbackEventType,
  endpointVisible,
  endpointWants,
  retryAfterMs,
  retryDelayMs,
} from '../../src/model/webhook.event.js'

const SECRET = `whsec_${Buffer.alloc(32, 1).toString('base64')}`
const endpoint = (over: Record<string, unknown> = {}) => ({
  name: 'ops',
  url: 'https://ops.example/hooks',
  secret: SECRET,
  serviceCodes: ['A'],
  ...over,
})
const load = (webhooks: Record<string, unknown>, env: Record<string, string> = {}) =>
  loadConfig({ env, file: 'livegate.json', value: { webhooks } })

describe('webhooks configuration', () => {
  it('has defaults: 10 s timeout, about a day of retries, off after 5 days, delivered kept 7 days, every event', () => {
    const config = load({ endpoints: [endpoint()] })
    const { webhooks } = config
    expect(webhooks.timeoutMs).toBe(10_000)
    const total = webhooks.retrySchedule.reduce((sum, step) => sum + step, 0)
    expect(total).toBeGreaterThan(20 * 3_600_000)
    expect(total).toBeLessThan(30 * 3_600_000)
    expect(webhooks.disableAfter).toBe(5 * 86_400_000)
    expect(webhooks.deliveredRetention).toBe(7 * 86_400_000)
    expect(webhooks.endpoints[0]).toEqual({
      name: 'ops',
      url: 'https://ops.example/hooks',
      secret: SECRET,
      serviceCodes: ['A'],
      events: ['*'],
    })
  })

  it('reads durations as "5s", "2m", "1h" or milliseconds, and a secret from the environment', () => {
    const config = load(
      {
        retrySchedule: ['5s', '2m', '1h', 250],
        endpoints: [endpoint({ secret: { env: 'HOOK_SECRET' }, serviceCodes: '*' })],
      },
      { HOOK_SECRET: SECRET },
    )
    expect(config.webhooks.retrySchedule).toEqual([5000, 120_000, 3_600_000, 250])
    expect(config.webhooks.endpoints[0]).toMatchObject({ secret: SECRET, serviceCodes: '*' })
  })

  it.each([
    [
      'a bad URL',
      { endpoints: [endpoint({ url: 'not a url' })] },
      'config file livegate.json: webhooks.endpoints[0].url: must be an http:// or https:// URL',
    ],
    [
      'a secret that is not whsec_ and base64',
      { endpoints: [endpoint({ secret: 'hunter2' })] },
      'config file livegate.json: webhooks.endpoints[0].secret: must be "whsec_" followed by the key in base64',
    ],
    [
      'an unknown event type',
      { endpoints: [endpoint({ events: ['task.exploded'] })] },
      'config file livegate.json: webhooks.endpoints[0].events[0]: "task.exploded" is not an event type',
    ],
    [
      'a duplicate name',
      { endpoints: [endpoint(), endpoint()] },
      'config file livegate.json: webhooks.endpoints[1].name: "ops" is configured twice',
    ],
    [
      'a bad duration',
      { retrySchedule: ['soon'], endpoints: [endpoint()] },
      'config file livegate.json: webhooks.retrySchedule[0]',
    ],
  ])('stops the start on %s, with one line naming the key', (_what, webhooks, message) => {
    expect(() => load(webhooks)).toThrowError(ConfigError)
    expect(() => load(webhooks)).toThrowError(message)
  })

  it('checks a secret from the environment once it is read', () => {
    expect(() =>
      load({ endpoints: [endpoint({ secret: { env: 'HOOK_SECRET' } })] }, { HOOK_SECRET: 'plain' }),
    ).toThrowError('webhooks.endpoints[0].secret: must be "whsec_"')
  })

  it('names every callback kind as an event type, and nothing else under callback.', () => {
    const callbackTypes = WEBHOOK_EVENT_TYPES.filter((type) => type.startsWith('callback.'))
    expect([...callbackTypes].sort()).toEqual(
      [...KIND_ENTRIES.map(([, entry]) => callbackEventType(entry.type)), 'callback.unknown'].sort(),
    )
  })
})

describe('webhook rules', () => {
  it('matches exact types, prefix.* patterns and service codes', () => {
    const ops = { serviceCodes: ['A'] as const, events: ['task.*', 'callback.live_end'] }
    expect(endpointWants(ops, 'task.ended', 'A')).toBe(true)
    expect(endpointWants(ops, 'callback.live_end', 'A')).toBe(true)
    expect(endpointWants(ops, 'callback.live_start', 'A')).toBe(false)
    expect(endpointWants(ops, 'task.ended', 'B')).toBe(false)
    expect(endpointWants({ serviceCodes: '*', events: ['*'] }, 'upstream.stale', 'Z')).toBe(true)
  })

  it('shows an endpoint only to a key whose codes cover all of its codes', () => {
    expect(endpointVisible({ serviceCodes: ['A'] }, ['A', 'B'])).toBe(true)
    expect(endpointVisible({ serviceCodes: ['A', 'C'] }, ['A', 'B'])).toBe(false)
    expect(endpointVisible({ serviceCodes: '*' }, ['A'])).toBe(false)
    expect(endpointVisible({ serviceCodes: '*' }, undefined)).toBe(true)
  })

  it('spreads each step of the schedule by a fifth, and ends it', () => {
    expect(retryDelayMs([1000, 5000], 1, 0)).toBe(800)
    expect(retryDelayMs([1000, 5000], 2, 0.999999)).toBe(6000)
    expect(retryDelayMs([1000, 5000], 3, 0.5)).toBeUndefined()
  })

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(retryAfterMs('120', 0)).toBe(120_000)
    expect(retryAfterMs(new Date(60_000).toUTCString(), 0)).toBe(60_000)
    expect(retryAfterMs('soon', 0)).toBeUndefined()
    expect(retryAfterMs(null, 0)).toBeUndefined()
  })
})
