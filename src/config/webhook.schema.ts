import { z } from 'zod'
import { duration } from './history.schema.js'

const SECOND = 1000
const HOUR = 3_600_000
const DAY = 24 * HOUR

/**
 * Every event type a webhook endpoint may ask for. The callback types are the `NotificationKind`
 * values in lower case (a unit test holds them equal to the kinds table, which this floor cannot
 * import); the others are what livegate derives from the log and the task list.
 */
export const WEBHOOK_EVENT_TYPES = [
  'callback.live_start',
  'callback.live_end',
  'callback.archived',
  'callback.client_disconnect',
  'callback.thumbnail',
  'callback.live_resume',
  'callback.unknown',
  'task.started',
  'task.ended',
  'task.health_changed',
  'task.callback_missing',
  'upstream.stale',
  'upstream.recovered',
  'action.succeeded',
  'action.failed',
  'incident.opened',
  'incident.acknowledged',
  'incident.resolved',
  'recording.ready',
  'recording.missing',
] as const

/** One event type a webhook carries. */
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number]

const PREFIXES = new Set(WEBHOOK_EVENT_TYPES.map((type) => type.slice(0, type.indexOf('.'))))

// An exact type, `prefix.*` for every type of a prefix, or `*` for all.
const eventPattern = z.string().superRefine((pattern, ctx) => {
  if (
    pattern === '*' ||
    (WEBHOOK_EVENT_TYPES as readonly string[]).includes(pattern) ||
    (pattern.endsWith('.*') && PREFIXES.has(pattern.slice(0, -2)))
  )
    return
  ctx.addIssue({
    code: 'custom',
    message: `"${pattern}" is not an event type (${WEBHOOK_EVENT_TYPES.join(', ')}) nor a pattern such as "task.*"`,
  })
})

const secretSchema = z.union([
  z.string().min(1, 'a secret may not be empty'),
  z.strictObject({ env: z.string().min(1) }),
])

const endpointSchema = z.strictObject({
  /** The endpoint's name: what GraphQL, logs and metrics call it. */
  name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1 to 64 letters, digits, "_", "." or "-"'),
  url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }),
  /** `whsec_` and the key in base64, as Standard Webhooks writes it (or from an environment variable). */
  secret: secretSchema,
  /** The service codes whose events it receives; `"*"` for all. */
  serviceCodes: z.union([z.literal('*'), z.array(z.string().min(1)).min(1)]),
  /** Exact types or `prefix.*` patterns; every type by default. */
  events: z.array(eventPattern).min(1).default(['*']),
})

/** `webhooks`: signed POSTs of every callback and of what livegate derives. */
export const webhooksSchema = z
  .strictObject({
    endpoints: z.array(endpointSchema).default([]),
    /** One attempt may take this long before it counts as failed. */
    timeoutMs: z.int().min(100).max(300_000).default(10_000),
    /** The waits before each retry; after the last the delivery is a dead letter. About a day in all by default. */
    retrySchedule: z
      .array(duration(0, 7 * DAY, 5 * SECOND))
      .max(50)
      .default([5 * SECOND, 5 * 60_000, 30 * 60_000, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR]),
    /** An endpoint that has failed every attempt for this long is switched off. */
    disableAfter: duration(SECOND, 365 * DAY, 5 * DAY),
    /** Delivered records are kept this long; dead letters 30 days. */
    deliveredRetention: duration(0, 365 * DAY, 7 * DAY),
    /** Attempts in flight to one endpoint at a time. */
    concurrency: z.int().min(1).max(256).default(16),
    /**
     * Under `serve --workers N`: a worker of its own puts events in line and delivers them, so delivery never
     * shares an HTTP worker's event loop with the callback route. False: every HTTP worker delivers.
     */
    ownWorker: z.boolean().default(true),
  })
  .superRefine((webhooks, ctx) => {
    const seen = new Set<string>()
    webhooks.endpoints.forEach((endpoint, index) => {
      if (seen.has(endpoint.name))
        ctx.addIssue({
          code: 'custom',
          path: ['endpoints', index, 'name'],
          message: `"${endpoint.name}" is configured twice`,
        })
      seen.add(endpoint.name)
      if (typeof endpoint.secret === 'string' && !isWebhookSecret(endpoint.secret)) {
        ctx.addIssue({ code: 'custom', path: ['endpoints', index, 'secret'], message: WEBHOOK_SECRET_MESSAGE })
      }
    })
  })

/** What a secret that is not Standard Webhooks' is told. */
export const WEBHOOK_SECRET_MESSAGE = 'must be "whsec_" followed by the key in base64 (at least 24 bytes)'

/** Whether a secret is `whsec_` and base64 of at least 24 bytes. */
export function isWebhookSecret(secret: string): boolean {
  const match = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret)
  if (!match) return false
  const key = match[1] as string
  return key.length % 4 === 0 && Buffer.from(key, 'base64').length >= 24
}

/** One configured endpoint with its secret resolved. */
export interface WebhookEndpointConfig {
  name: string
  url: string
  secret: string
  serviceCodes: readonly string[] | '*'
  events: readonly string[]
}
