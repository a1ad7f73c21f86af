import type { AlertRule } from '../config/alerts.schema.js'
import type { HealthState } from './task.health.js'
import { spoken, summarize } from './alert.summary.js'

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
  tracks: Tracks
}

/** The one key of a subject: a task, or a service code when `taskId` is null. */
function subjectKey(serviceCode: string, taskId: string | null): string {
  return JSON.stringify([serviceCode, taskId])
}

/**
 * Where each condition stands for each subject: condition → subject → track. Rules that differ
 * only in `for`, `clearFor` or severity watch one condition, which holds or clears at the same
 * moments for all of them: one track serves them all, and each rule reads its own durations off it.
 */
export type Tracks = ReadonlyMap<string, ReadonlyMap<string, Track>>

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

/** Rules that watch one condition: the same signal, states, threshold and codes. */
interface Condition {
  key: string
  rules: AlertRule[]
  /** Subjects that have an incident of one of these rules open. */
  open: Set<string>
}

function conditions(rules: readonly AlertRule[]): Map<string, Condition> {
  const byKey = new Map<string, Condition>()
  for (const rule of rules) {
    const key = JSON.stringify([rule.when, rule.is ?? null, rule.below ?? null, rule.above ?? null, rule.serviceCodes])
    const condition = byKey.get(key) ?? { key, rules: [], open: new Set<string>() }
    condition.rules.push(rule)
    byKey.set(key, condition)
  }
  return byKey
}

/**
 * Decides one pass at `now`. Every condition looks at every subject in its scope, and most of
 * them are fine: those cost one comparison. A track is kept only for a subject whose condition
 * holds or whose incident is open (where `clearFor` counts), so a pass over many rules and tasks
 * makes nothing for the subjects that are fine.
 */
export function evaluateRules(
  rules: readonly AlertRule[],
  readings: Readings,
  open: readonly OpenIncident[],
  tracks: Tracks,
  now: number,
): Decisions {
  const next = new Map<string, Map<string, Track>>()
  const opens: Opening[] = []
  const resolves: Resolving[] = []
  const watched = conditions(rules)
  const conditionOf = new Map<string, Condition>()
  for (const condition of watched.values()) for (const rule of condition.rules) conditionOf.set(rule.name, condition)
  const openByRule = new Map<string, Map<string, OpenIncident>>()
  for (const incident of open) {
    const subject = subjectKey(incident.serviceCode, incident.taskId)
    const here = openByRule.get(incident.rule) ?? new Map<string, OpenIncident>()
    here.set(subject, incident)
    openByRule.set(incident.rule, here)
    conditionOf.get(incident.rule)?.open.add(subject)
  }
  const taskKeys = readings.tasks.map((task) => subjectKey(task.serviceCode, task.taskId))
  const liveTasks = new Set(taskKeys)
  const ruleOf = new Map(rules.map((rule) => [rule.name, rule]))
  for (const incident of open) {
    const rule = ruleOf.get(incident.rule)
    if (!rule)
      resolves.push({
        id: incident.id,
        reason: 'rule-removed',
        summary: `rule "${incident.rule}" is no longer configured`,
      })
    // A rule whose `serviceCodes` no longer name the code never looks at it again: nothing else would resolve it.
    else if (!inScope(rule, incident.serviceCode))
      resolves.push({
        id: incident.id,
        reason: 'rule-removed',
        summary: `rule "${incident.rule}" no longer watches ${incident.serviceCode}`,
      })
    else if (incident.taskId !== null && !liveTasks.has(subjectKey(incident.serviceCode, incident.taskId)))
      resolves.push({ id: incident.id, reason: 'task-ended', summary: `task ${incident.taskId} ended` })
  }
  for (const condition of watched.values()) {
    const before = tracks.get(condition.key)
    const kept = new Map<string, Track>()
    next.set(condition.key, kept)
    const first = condition.rules[0] as AlertRule
    observe(first, readings, taskKeys, (subject, holds, index) => {
      // False with no incident open: nothing to count, so nothing kept.
      if (!holds && !condition.open.has(subject)) return
      const was = before?.get(subject)
      let track: Track
      if (!holds)
        track =
          was?.holdingSince === null ? was : { holdingSince: null, clearSince: was?.clearSince ?? now, value: null }
      // Still holding: the same track (when it began, and the reading that made it hold).
      else if (was && was.holdingSince !== null) track = was
      else {
        const seen = reading(first, readings, index, holds)
        track = { holdingSince: Math.min(seen.since ?? now, now), clearSince: null, value: seen.value }
      }
      kept.set(subject, track)
      for (const rule of condition.rules) decide(rule, subject, track, index)
    })
  }
  return { opens, resolves, tracks: next }

  function decide(rule: AlertRule, subject: string, track: Track, index: number): void {
    const incident = openByRule.get(rule.name)?.get(subject)
    if (!incident && track.holdingSince !== null && now - track.holdingSince >= rule.forMs) {
      const seen = reading(rule, readings, index, true)
      const { serviceCode, taskId, value } = seen
      const threshold = rule.below ?? rule.above ?? null
      const summary = summarize(rule, seen, now - track.holdingSince)
      opens.push({ rule, serviceCode, taskId, startedAt: track.holdingSince, value, threshold, summary })
    }
    if (incident && track.clearSince !== null && now - track.clearSince >= rule.clearForMs) {
      resolves.push({
        id: incident.id,
        reason: 'cleared',
        summary: `no longer true for ${spoken(now - track.clearSince)}`,
      })
    }
  }
}

function inScope(rule: AlertRule, serviceCode: string): boolean {
  return rule.serviceCodes === '*' || rule.serviceCodes.includes(serviceCode)
}

function compare(rule: AlertRule, value: number): boolean {
  if (rule.below !== undefined) return value < rule.below
  if (rule.above !== undefined) return value > rule.above
  return false
}

/** Told of one subject in a rule's scope: its key, whether the condition holds, and its place in the readings. */
type Look = (subject: string, holds: boolean, index: number) => void

const isTaskRule = (rule: AlertRule) => rule.when.startsWith('task.')

function valueRead(rule: AlertRule, readings: Readings, index: number): number | null {
  if (isTaskRule(rule)) {
    const task = readings.tasks[index] as TaskReading
    return rule.when === 'task.viewers' ? task.viewers : rule.when === 'task.inputBitrate' ? task.inputBitrate : null
  }
  const service = readings.services[index] as ServiceReading
  return rule.when === 'service.viewers'
    ? service.viewers
    : rule.when === 'service.callbacksMissing'
      ? service.callbacksMissing
      : null
}

// What a rule read of one subject, made only for the few subjects that hold or have an incident open.
function reading(rule: AlertRule, readings: Readings, index: number, holds: boolean): Observation {
  const value = valueRead(rule, readings, index)
  if (isTaskRule(rule)) {
    const task = readings.tasks[index] as TaskReading
    const since = holds && rule.when === 'task.health' ? task.healthSince : null
    return { serviceCode: task.serviceCode, taskId: task.taskId, holds, value, since, state: task.health }
  }
  const service = readings.services[index] as ServiceReading
  const since = holds && rule.when === 'upstream.stale' ? service.staleSince : null
  return { serviceCode: service.serviceCode, taskId: null, holds, value, since }
}

// Whether a rule holds for each subject in its scope; a subject without a reading is left out,
// so its track neither opens nor clears on what was not seen. One comparison a subject, nothing made.
function observe(rule: AlertRule, readings: Readings, taskKeys: readonly string[], look: Look): void {
  if (isTaskRule(rule)) {
    const states = rule.is ?? []
    const health = rule.when === 'task.health'
    for (let i = 0; i < readings.tasks.length; i++) {
      const task = readings.tasks[i] as TaskReading
      if (!inScope(rule, task.serviceCode)) continue
      if (health) {
        look(taskKeys[i] as string, states.includes(task.health), i)
        continue
      }
      const value = rule.when === 'task.viewers' ? task.viewers : task.inputBitrate
      if (value !== null) look(taskKeys[i] as string, compare(rule, value), i)
    }
    return
  }
  readings.services.forEach((service, i) => {
    if (!inScope(rule, service.serviceCode)) return
    const subject = subjectKey(service.serviceCode, null)
    if (rule.when === 'upstream.stale') return look(subject, service.stale, i)
    const value = valueRead(rule, readings, i)
    if (value !== null) look(subject, compare(rule, value), i)
  })
}
