// Still exported here for the readers not yet on the one listener (work/alerts/incident.watch.ts).

/**
 * What travels between instances: a doorbell that the log grew (readers then read the log from
 * their own position), or the id of a task whose state changed; never whole rows (NOTIFY payloads
 * are capped at 8000 bytes, and each listener reads what it needs once per event).
 */
export type RealtimeEvent =
  | { kind: 'log' }
  | { kind: 'task'; serviceCode: string; taskId: string }
  | { kind: 'action'; id: number }
  | { kind: 'incident'; id: number }

/** The doorbell's payload: the same text for every commit, so a transaction's copies fold into one. */
export const LOG_GREW = '{"l":1}'

// Room below NOTIFY's 8000-byte cap; a task id that long is not a task id.
const MAX_PAYLOAD = 7900

/** The payload text of an event, or undefined when it would not fit a NOTIFY. */
export function encodeEvent(event: RealtimeEvent): string | undefined {
  const text =
    event.kind === 'log'
      ? LOG_GREW
      : event.kind === 'action'
        ? JSON.stringify({ a: event.id })
        : event.kind === 'incident'
          ? JSON.stringify({ i: event.id })
          : JSON.stringify({ t: [event.serviceCode, event.taskId] })
  return Buffer.byteLength(text) <= MAX_PAYLOAD ? text : undefined
}

/** The event in a payload, or undefined for anything else on the channel. */
export function decodeEvent(payload: string): RealtimeEvent | undefined {
  let value: unknown
  try {
    value = JSON.parse(payload)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  const { l, t, a, i } = value as { l?: unknown; t?: unknown; a?: unknown; i?: unknown }
  if (l === 1) return { kind: 'log' }
  if (typeof a === 'number' && Number.isSafeInteger(a) && a > 0) return { kind: 'action', id: a }
  if (typeof i === 'number' && Number.isSafeInteger(i) && i > 0) return { kind: 'incident', id: i }
  if (Array.isArray(t) && t.length === 2 && typeof t[0] === 'string' && typeof t[1] === 'string')
    return { kind: 'task', serviceCode: t[0], taskId: t[1] }
  return undefined
}

/** The events of the tasks a write changed. */
export function taskEvents(tasks: ReadonlyArray<{ serviceCode: string; taskId: string }>): RealtimeEvent[] {
  return tasks.map((task) => ({ kind: 'task', serviceCode: task.serviceCode, taskId: task.taskId }))
}
