import { callbackKind } from './callback.kinds.js'

/**
 * What a webhook is made of, pure: which type a callback is, which endpoint wants which event,
 * and when a failed attempt is tried again.
 */

/** The event type of a stored callback: `callback.` and its `NotificationKind` in lower case. */
export function callbackEventType(type: number): string {
  return `callback.${callbackKind(type).toLowerCase()}`
}

/** What an endpoint asks for: its service codes (or all) and its event patterns. */
export interface EndpointInterest {
  serviceCodes: readonly string[] | '*'
  events: readonly string[]
}

/** Whether an endpoint receives an event of this type and service code. */
export function endpointWants(endpoint: EndpointInterest, type: string, serviceCode: string): boolean {
  if (endpoint.serviceCodes !== '*' && !endpoint.serviceCodes.includes(serviceCode)) return false
  return endpoint.events.some(
    (pattern) =>
      pattern === '*' || pattern === type || (pattern.endsWith('.*') && type.startsWith(pattern.slice(0, -1))),
  )
}

/**
 * Whether a caller reading these service codes (undefined: all) may see an endpoint: only when they cover all of its
 * codes.
 */
export function endpointVisible(
  endpoint: Pick<EndpointInterest, 'serviceCodes'>,
  allowed: readonly string[] | undefined,
): boolean {
  if (allowed === undefined) return true
  if (endpoint.serviceCodes === '*') return false
  return endpoint.serviceCodes.every((code) => allowed.includes(code))
}

/** The longest wait a `Retry-After` may ask for; beyond it the answer is taken as a day. */
const MAX_RETRY_AFTER_MS = 86_400_000

/**
 * The wait a `Retry-After` header asks for (seconds, or an HTTP date), or undefined when it is
 * absent or unreadable.
 */
export function retryAfterMs(header: string | null | undefined, now: number): number | undefined {
  if (!header) return undefined
  const text = header.trim()
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, MAX_RETRY_AFTER_MS)
  const at = Date.parse(text)
  if (Number.isNaN(at)) return undefined
  return Math.min(Math.max(0, at - now), MAX_RETRY_AFTER_MS)
}

/**
 * The wait before the retry that follows attempt number `attempts` (1 for the first), or
 * undefined when the schedule is spent (a dead letter). The schedule's own step is spread by up
 * to a fifth either way (`random` in [0, 1)), so the deliveries that failed together (an endpoint
 * down) do not all come back in the same instant.
 */
export function retryDelayMs(schedule: readonly number[], attempts: number, random: number): number | undefined {
  const step = schedule[attempts - 1]
  if (step === undefined) return undefined
  return Math.round(step * (0.8 + 0.4 * random))
}
