import type { AlertRule } from '../config/alerts.schema.js'

/**
 * How an incident reads to a person: its summary line, in words an operator says aloud, with
 * durations rounded the way people round them.
 */

/** What a summary needs of an observation. */
export interface SummaryReading {
  serviceCode: string
  taskId: string | null
  value: number | null
  /** The health state read, for a health rule. */
  state?: string
}

/** A duration as a person says it: "20 s", "2 min", "1 h 5 min". */
export function spoken(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000))
  if (seconds < 120) return `${seconds} s`
  const minutes = Math.round(seconds / 60)
  if (minutes < 120) return `${minutes} min`
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`
}

const SAYS: Readonly<Record<AlertRule['when'], string>> = {
  'task.health': 'health',
  'task.viewers': 'viewers',
  'task.inputBitrate': 'input bits/s',
  'service.viewers': 'viewers of its live tasks',
  'upstream.stale': 'task list stale',
  'service.callbacksMissing': 'tasks in the last hour whose start or end the cloud never sent',
}

/** An incident's summary: who, what it read, and for how long it held. */
export function summarize(rule: AlertRule, seen: SummaryReading, heldMs: number): string {
  const who = seen.taskId === null ? seen.serviceCode : `task ${seen.serviceCode}/${seen.taskId}`
  // A count over the last hour reads as a sentence; how long it held adds only to a rule that waits.
  if (rule.when === 'service.callbacksMissing') {
    const n = Math.round(seen.value ?? 0)
    const held = rule.forMs > 0 ? `, for ${spoken(heldMs)}` : ''
    const tasks = `${n} ${n === 1 ? 'task' : 'tasks'}`
    return `${who}: ${tasks} in the last hour whose start or end the cloud never sent (above ${rule.above})${held}`
  }
  const what =
    rule.when === 'task.health'
      ? `${SAYS[rule.when]} ${seen.state}`
      : rule.when === 'upstream.stale'
        ? SAYS[rule.when]
        : `${SAYS[rule.when]} ${Math.round(seen.value ?? 0)} ${boundOf(rule)}`
  return `${who}: ${what} for ${spoken(heldMs)}`
}

function boundOf(rule: { below?: number | undefined; above?: number | undefined }): string {
  return rule.below !== undefined ? `below ${rule.below}` : `above ${rule.above}`
}
