/**
 * The NOTIFY channels between gateway instances, named here and nowhere else. Each carries a
 * hint, never rows: a reader that hears one reads what it needs from the database.
 */

/** The log grew, or a task, action or incident changed (`event.codec.ts` says how). */
export const EVENT_CHANNEL = 'livegate_events'

/** A service code's `task_list` answer was sampled (`sample.hub.ts` says how). */
export const SAMPLE_CHANNEL = 'livegate_samples'

/** Deliveries were put in line: every instance's endpoint workers look at once. */
export const WEBHOOK_CHANNEL = 'livegate_webhooks'

/** Every channel a process listens on, through its one listener (`work/channel.listener.ts`). */
export const CHANNELS = [EVENT_CHANNEL, SAMPLE_CHANNEL, WEBHOOK_CHANNEL] as const

export type Channel = (typeof CHANNELS)[number]
