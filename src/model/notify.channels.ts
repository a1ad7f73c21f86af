/**
 * The NOTIFY channels between gateway instances, named here and nowhere else. Each carries a hint,
 * never rows (`event.codec.ts`), and a reader hears only its own: the doorbell's readers are not
 * woken by every folded task, nor anyone by a probe.
 */

/** The log grew: rung by `ringDoorbell`; read by the pass scheduler and the realtime engine. */
export const DOORBELL_CHANNEL = 'livegate_log'
/** A task, action or incident changed: read by the realtime engine and the alert watch. */
export const EVENT_CHANNEL = 'livegate_events'
/** A service code's `task_list` answer was sampled: read by the same two. */
export const SAMPLE_CHANNEL = 'livegate_samples'
/** A listener's probe of its own connection (`work/channel.heartbeat.ts`): only its sender reads it. */
export const HEARTBEAT_CHANNEL = 'livegate_heartbeat'
/** Deliveries were put in line (`webhook.enqueuer.ts`): every instance's endpoint workers look. */
export const WEBHOOK_CHANNEL = 'livegate_webhooks'

/** Every channel a process listens on, through its one listener (`work/channel.listener.ts`). */
export const CHANNELS = [DOORBELL_CHANNEL, EVENT_CHANNEL, SAMPLE_CHANNEL, HEARTBEAT_CHANNEL, WEBHOOK_CHANNEL] as const
export type Channel = (typeof CHANNELS)[number]
