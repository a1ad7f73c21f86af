import type { AlertRule } from '../config/alerts.schema.js'
import type { HealthState } from './task.health.js'

/**
 * Alert rules over readings, pure: given the rules, what each subject reads now and the open
 * incidents, which incidents open and which resolve. The caller keeps the tracks between passes
 * (in memory: a restart starts each `for` and `clearFor` anew, and the open incidents it finds
 * in the database go on as they were) and makes every decision durable where the database holds
 * "one open incident per rule and subject".
 */

/** What one task reads now; a task absent from a pass has ended (or was never live). */
export interface TaskReading {
  serviceCode: string
  taskId: string
  health: HealthState
  /** When its health began, when known: a condition that began before livegate looked. */
  healthSince: number | null
  /** At its latest sample; null while it is not listed. */
  viewers: number | null
  /** Input bits per second at its latest sample; null when the sample could not say. */
  inputBitrate: number | null
}

/** What one service code reads now. */
export interface ServiceReading {
  serviceCode: string
  /** The sum of its live tasks' viewers; null while no fresh task list answer says it. */
  viewers: number | null
  stale: boolean
  /** When it went stale (its last success), when known. */
  staleSince: number | null
  /** Tasks of the last hour the cloud never sent a start or an end for. */
  callbacksMissing: number
}

/** One pass's readings. */
export interface Readings {
  tasks: readonly TaskReading[]
  services: readonly ServiceReading[]
}

/** An incident that is open now (acknowledged or not). */
export interface OpenIncident {
  id: number
  rule: string
  serviceCode: string
  taskId: string | null
}

/** Where one rule stands for one subject between passes. */
export interface Track {
  /** Since when the condition holds; null while it does not. */
  holdingSince: number | null
  /** Since when it has been false; null while it holds or was never seen false. */
  clearSince: number | null
  /** The reading that made it hold, kept for the incident. */
  value: number | null
}

/** An incident to open. */
export interface Opening {
  rule: AlertRule
  serviceCode: string
  taskId: string | null
  startedAt: number
  value: number | null
  threshold: number | null
  summary: string
}

/** An incident to resolve, and why. */
export interface Resolving {
  id: number
  reason: 'cleared' | 'task-ended' | 'rule-removed'
  summary: string
}

/** What one pass decided, and the tracks to keep for the next. */
export interface Decisions {
  opens: Opening[]
  resolves: Resolving[]
  tracks: Map<string, Track>
}

/** The one key of a rule and a subject (a task, or a service code when `taskId` is null). */
export function trackKey(rule: string, serviceCode: string, taskId: string | null): string {
  return JSON.stringify([rule, serviceCode, taskId])
}

interface Observation {
  serviceCode: string
  taskId: string | null
  holds: boolean
  value: number | null
  /** When the condition began, when the reading itself says so. */
  since: number | null
  /** The health state read, for the summary. */
  state?: string
}

/** Decides one pass at `now`. */
export function evaluateRules(rules: readonly AlertRule[], readings: Readings, open: readonly OpenIncident[], tracks: ReadonlyMap<string, Track>, now: number): Decisions {
  const next = new Map<string, Track>()
  const opens: Opening[] = []
  const resolves: Resolving[] = []
  const openByKey = new Map(open.map((incident) => [trackKey(incident.rule, incident.serviceCode, incident.taskId), incident]))
  const liveTasks = new Set(readings.tasks.map((task) => JSON.stringify([task.serviceCode, task.taskId])))
  const byName = new Map(rules.map((rule) => [rule.name, rule]))
  for (const incident of open) {
    if (!byName.has(incident.rule)) resolves.push({ id: incident.id, reason: 'rule-removed', summary: `rule "${incident.rule}" is no longer configured` })
    else if (incident.taskId !== null && !liveTasks.has(JSON.stringify([incident.serviceCode, incident.taskId])))
      resolves.push({ id: incident.id, reason: 'task-ended', summary: `task ${incident.taskId} ended` })
  }
  for (const rule of rules) {
    for (const seen of observe(rule, readings)) {
      const key = trackKey(rule.name, seen.serviceCode, seen.taskId)
      const before = tracks.get(key)
      const track: Track = seen.holds
        ? { holdingSince: before?.holdingSince ?? Math.min(seen.since ?? now, now), clearSince: null, value: seen.value }
        : { holdingSince: null, clearSince: before?.clearSince ?? now, value: null }
      next.set(key, track)
      const incident = openByKey.get(key)
      if (!incident && track.holdingSince !== null && now - track.holdingSince >= rule.forMs) {
        const threshold = rule.below ?? rule.above ?? null
        opens.push({ rule, serviceCode: seen.serviceCode, taskId: seen.taskId, startedAt: track.holdingSince, value: seen.value, threshold, summary: summarize(rule, seen, now - track.holdingSince) })
      }
      if (incident && track.clearSince !== null && now - track.clearSince >= rule.clearForMs) {
        resolves.push({ id: incident.id, reason: 'cleared', summary: `no longer true for ${spoken(now - track.clearSince)}` })
      }
    }
  }
  return { opens, resolves, tracks: next }
}

function inScope(rule: AlertRule, serviceCode: string): boolean {
  return rule.serviceCodes === '*' || rule.serviceCodes.includes(serviceCode)
}

function compare(rule: AlertRule, value: number): boolean {
  if (rule.below !== undefined) return value < rule.below
  if (rule.above !== undefined) return value > rule.above
  return false
}

// What a rule reads of each subject in its scope; a subject without a reading is left out, so
// its track neither opens nor clears on what was not seen.
function observe(rule: AlertRule, readings: Readings): Observation[] {
  const out: Observation[] = []
  if (rule.when.startsWith('task.')) {
    for (const task of readings.tasks) {
      if (!inScope(rule, task.serviceCode)) continue
      const subject = { serviceCode: task.serviceCode, taskId: task.taskId }
      if (rule.when === 'task.health') {
        const holds = (rule.is ?? []).includes(task.health)
        out.push({ ...subject, holds, value: null, since: holds ? task.healthSince : null, state: task.health })
        continue
      }
      const value = rule.when === 'task.viewers' ? task.viewers : task.inputBitrate
      if (value !== null) out.push({ ...subject, holds: compare(rule, value), value, since: null })
    }
    return out
  }
  for (const service of readings.services) {
    if (!inScope(rule, service.serviceCode)) continue
    const subject = { serviceCode: service.serviceCode, taskId: null }
    if (rule.when === 'upstream.stale') out.push({ ...subject, holds: service.stale, value: null, since: service.stale ? service.staleSince : null })
    else {
      const value = rule.when === 'service.viewers' ? service.viewers : service.callbacksMissing
      if (value !== null) out.push({ ...subject, holds: compare(rule, value), value, since: null })
    }
  }
  return out
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

function summarize(rule: AlertRule, seen: Observation, heldMs: number): string {
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
        : `${SAYS[rule.when]} ${Math.round(seen.value ?? 0)} ${rule.below !== undefined ? `below ${rule.below}` : `above ${rule.above}`}`
  return `${who}: ${what} for ${spoken(heldMs)}`
}
