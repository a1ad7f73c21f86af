import { type Channel, DOORBELL_CHANNEL, EVENT_CHANNEL, SAMPLE_CHANNEL } from './notify.channels.js'

/**
 * What travels between instances, the one codec of the realtime channels: a doorbell that the log
 * grew (readers read on from their own position), the id of a task, action or incident that changed,
 * or a code's sampled answer; never rows (NOTIFY's 8000-byte cap; each reader reads once per event).
 */
export type RealtimeEvent =
  | { kind: 'log' }
  | { kind: 'task'; serviceCode: string; taskId: string }
  | { kind: 'action'; id: number }
  | { kind: 'incident'; id: number }
  | { kind: 'sample'; serviceCode: string; at: number }

/** The doorbell's payload: the same text for every commit, so a transaction's copies fold into one. */
export const LOG_GREW = '{"l":1}'

// Room below NOTIFY's 8000-byte cap; a task id that long is not a task id.
const MAX_PAYLOAD = 7900

/** The channel an event travels on: doorbells, entity changes and samples each have their own. */
export function eventChannel(event: RealtimeEvent): Channel {
  return event.kind === 'log' ? DOORBELL_CHANNEL : event.kind === 'sample' ? SAMPLE_CHANNEL : EVENT_CHANNEL
}

/** The payload text of an event, or undefined when it would not fit a NOTIFY. */
export function encodeEvent(event: RealtimeEvent): string | undefined {
  const text =
    event.kind === 'log'
      ? LOG_GREW
      : event.kind === 'action'
        ? JSON.stringify({ a: event.id })
        : event.kind === 'incident'
          ? JSON.stringify({ i: event.id })
          : event.kind === 'task'
            ? JSON.stringify({ t: [event.serviceCode, event.taskId] })
            : JSON.stringify({ s: [event.serviceCode, event.at] })
  return Buffer.byteLength(text) <= MAX_PAYLOAD ? text : undefined
}

const isId = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value > 0
const isPair = (value: unknown): value is [string, unknown] =>
  Array.isArray(value) && value.length === 2 && typeof value[0] === 'string'

/** The event in a payload, or undefined for anything else on the channel. */
export function decodeEvent(payload: string): RealtimeEvent | undefined {
  let value: unknown
  try {
    value = JSON.parse(payload)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  const { l, t, a, i, s } = value as Record<string, unknown>
  if (l === 1) return { kind: 'log' }
  if (isId(a)) return { kind: 'action', id: a }
  if (isId(i)) return { kind: 'incident', id: i }
  if (isPair(t) && typeof t[1] === 'string') return { kind: 'task', serviceCode: t[0], taskId: t[1] }
  if (isPair(s) && Number.isFinite(s[1])) return { kind: 'sample', serviceCode: s[0], at: s[1] as number }
  return undefined
}

/** The events of the tasks a write changed. */
export function taskEvents(tasks: ReadonlyArray<{ serviceCode: string; taskId: string }>): RealtimeEvent[] {
  return tasks.map((task) => ({ kind: 'task', serviceCode: task.serviceCode, taskId: task.taskId }))
}
