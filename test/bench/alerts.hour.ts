import { type AlertRule, alertRules } from '../../src/config/alerts.schema.js'
import { type Opening, evaluateRules, type OpenIncident, type Tracks } from '../../src/fold/alert.evaluator.js'
import { type LiveTask, sampleAnswer } from '../../src/fold/answer.sample.js'
import { taskHealth } from '../../src/fold/task.health.js'
import { taskListAnswerSchema } from '../../src/model/task-list.schema.js'
import { faultsOf, listFaultAt, type PlannedFault } from '../../src/simulator/fault.plan.js'
import type { Scenario } from '../../src/simulator/scenario.model.js'
import { generateScenario } from '../../src/simulator/session.scenario.js'
import { taskListAt } from '../../src/simulator/task-list.snapshot.js'

/**
 * A simulated hour of the cloud, its faults planned with their ground truth (fault.plan.ts),
 * played in simulated time through livegate's own pure parts: each poll's answer from the
 * simulator's task list, sampled by the fold (`sampleAnswer`: health, rates, reconciliation), a
 * task's life from the scenario's callbacks as due by then, and the rules decided by the
 * evaluator at every poll and every second, as the watch does. What it leaves out: the database
 * and the webhook's delivery (held apart in the integration tests and the delivery part).
 */

export const POLL_MS = 1000
export const FOR_MS = 3000
const TICK_MS = 1000
const TIMEOUT_MS = 1000
// As upstream-status says: stale after three polls and a timeout with no success.
const STALE_MS = 3 * POLL_MS + TIMEOUT_MS
const GRACE_MS = 2 * POLL_MS
const HOUR = 3_600_000
const CODES = ['A', 'B', 'C']

const RULES: AlertRule[] = alertRules({
  rules: [
    { name: 'stall', when: 'task.health', is: ['STARVING'], for: FOR_MS, serviceCodes: '*', severity: 'CRITICAL' },
    {
      name: 'reconnecting',
      when: 'task.health',
      is: ['RECONNECTING'],
      for: FOR_MS,
      serviceCodes: '*',
      severity: 'WARNING',
    },
    {
      name: 'weak-input',
      when: 'task.inputBitrate',
      below: 200_000,
      for: FOR_MS,
      serviceCodes: '*',
      severity: 'WARNING',
    },
    { name: 'audience-drop', when: 'service.viewers', below: 1, for: FOR_MS, serviceCodes: '*', severity: 'WARNING' },
    { name: 'stale-list', when: 'upstream.stale', for: FOR_MS, serviceCodes: '*', severity: 'CRITICAL' },
    { name: 'forgetful', when: 'service.callbacksMissing', above: 0, for: 0, serviceCodes: '*', severity: 'INFO' },
  ],
})

// Which rule finds which fault (a stall also makes the input's bits/s fall: weak-input may open with it).
const FINDS: Record<PlannedFault['kind'], string> = {
  stall: 'stall',
  'starving-input': 'weak-input',
  'audience-drop': 'audience-drop',
  'stale-list': 'stale-list',
  'forgotten-start': 'forgetful',
  reconnect: 'reconnecting',
}

/** One incident the hour opened, in simulated ms from the scenario's start. */
interface Opened {
  rule: string
  serviceCode: string
  taskId: string | null
  at: number
  resolvedAt: number | null
}

/** What the hour measured. */
export interface HourFigures {
  sessions: number
  faults: number
  detected: number
  /** Per fault kind: how many, how many found, the latencies (ms from the fault to the opening). */
  kinds: Record<string, { faults: number; detected: number; latencies: number[]; interrupted?: number }>
  reconnects: number
  reconnectIncidents: number
  duplicates: number
  /** Incidents of a rule no fault of its kind explains. */
  unexplained: number
  /** A task's faults while its code's list was stale: unseeable, not counted. */
  masked: number
  passes: number
}

/** A scenario of about an hour: 3 codes, 480 tasks of 20 s to a minute and a half, twelve of each code's faults. */
export function hourScenario(seed: number): Scenario {
  // Ten marathons: every code has one in the thousands (every fourth session's audience), live all the hour.
  const day = { unitMs: 6000, marathons: 10, swayPeriodMs: 150_000 }
  return generateScenario({ seed, sessions: 480, serviceCodes: CODES, rate: 1, audience: true, day, serviceFaults: 12 })
}

/** Plays the hour. */
export function playHour(scenario: Scenario): HourFigures {
  const before = new Map(CODES.map((code) => [code, new Map<string, LiveTask>()]))
  const lastSuccess = new Map<string, number>()
  // When the reconciliation found each start missing, per code (the `missing_start_at` kept in task_live).
  const missingAt = new Map(CODES.map((code) => [code, [] as number[]]))
  const latest = new Map<string, Map<string, { viewers: number; rate: number | null }>>()
  const callbacks = scenario.callbacks
  let due = 0
  const facts = new Map<string, { hasStart: boolean; hasEnd: boolean; waiting: boolean; waitingSince: number | null }>()
  let tracks: Tracks = new Map()
  const open = new Map<string, OpenIncident & { opened: Opened }>()
  const opened: Opened[] = []
  let nextId = 1
  let passes = 0
  for (let t = 0; t <= scenario.durationMs + 10_000; t += TICK_MS) {
    // The callbacks due by now, folded into each task's life.
    for (; due < callbacks.length && (callbacks[due]?.atMs ?? Infinity) <= t; due++) {
      const callback = callbacks[due] as Scenario['callbacks'][number]
      const fact = facts.get(callback.taskId) ?? { hasStart: false, hasEnd: false, waiting: false, waitingSince: null }
      if (callback.type === 0) fact.hasStart = true
      if (callback.type === 1) fact.hasEnd = true
      if (callback.type === 15) {
        fact.waiting = callback.fields.status === '0'
        fact.waitingSince = fact.waiting ? callback.atMs : null
      }
      facts.set(callback.taskId, fact)
    }
    if (t % POLL_MS === 0) {
      for (const code of CODES) {
        if (listFaultAt(scenario, code, t)) continue
        const answer = taskListAnswerSchema.parse({ ret: 0, ...taskListAt(scenario, code, t) })
        const sampled = sampleAnswer(code, answer, t, before.get(code) as Map<string, LiveTask>, facts, GRACE_MS)
        const rows = before.get(code) as Map<string, LiveTask>
        for (const row of sampled.live) rows.set(row.taskId, row)
        for (const found of sampled.missing) if (found.kind === 'LIVE_START') missingAt.get(code)?.push(t)
        for (const [id, row] of rows) if (!row.listed && row.endChecked) rows.delete(id)
        latest.set(
          code,
          new Map(
            sampled.tasks.map((task) => [task.taskId, { viewers: task.viewers, rate: task.input?.rate ?? null }]),
          ),
        )
        lastSuccess.set(code, t)
      }
    }
    const tasks = CODES.flatMap((code) => {
      const stale = t - (lastSuccess.get(code) ?? 0) >= STALE_MS
      return [...(before.get(code) as Map<string, LiveTask>).values()]
        .filter((row) => row.listed && !facts.get(row.taskId)?.hasEnd)
        .map((row) => {
          const fact = facts.get(row.taskId)
          const status = fact?.waiting ? 'WAITING_RECONNECT' : 'LIVE'
          const sampled = { health: row.health, since: row.since }
          const view = taskHealth({
            status,
            listed: true,
            endedAt: null,
            waitingSince: fact?.waitingSince ?? null,
            sampled,
            stale,
          })
          const seen = latest.get(code)?.get(row.taskId)
          return {
            serviceCode: code,
            taskId: row.taskId,
            health: view.state,
            healthSince: view.since,
            viewers: seen?.viewers ?? null,
            inputBitrate: seen?.rate ?? null,
          }
        })
    })
    const services = CODES.map((code) => {
      const last = lastSuccess.get(code)
      const stale = t - (last ?? 0) >= STALE_MS
      const missing = (missingAt.get(code) ?? []).filter((at) => at >= t - HOUR).length
      const viewers =
        stale || last === undefined
          ? null
          : tasks.filter((task) => task.serviceCode === code).reduce((sum, task) => sum + (task.viewers ?? 0), 0)
      return {
        serviceCode: code,
        viewers,
        stale,
        staleSince: stale ? (last ?? 0) + STALE_MS : null,
        callbacksMissing: missing,
      }
    })
    const decided = evaluateRules(RULES, { tasks, services }, [...open.values()], tracks, t)
    passes++
    tracks = decided.tracks
    for (const opening of decided.opens)
      open.set(key(opening), {
        id: nextId++,
        rule: opening.rule.name,
        serviceCode: opening.serviceCode,
        taskId: opening.taskId,
        opened: record(opening, t, opened),
      })
    for (const resolving of decided.resolves) {
      for (const [k, incident] of open) {
        if (incident.id !== resolving.id) continue
        incident.opened.resolvedAt = t
        open.delete(k)
      }
    }
  }
  return judge(scenario, opened, passes)
}

function key(opening: { rule: { name: string } | string; serviceCode: string; taskId: string | null }): string {
  return JSON.stringify([
    typeof opening.rule === 'string' ? opening.rule : opening.rule.name,
    opening.serviceCode,
    opening.taskId,
  ])
}

function record(opening: Opening, t: number, into: Opened[]): Opened {
  const row = {
    rule: opening.rule.name,
    serviceCode: opening.serviceCode,
    taskId: opening.taskId,
    at: t,
    resolvedAt: null,
  }
  into.push(row)
  return row
}

// Each fault against the incidents: found when its rule's incident for its subject opened in it
// (or was open when it began); a reconnect is quiet when none did.
function judge(scenario: Scenario, opened: Opened[], passes: number): HourFigures {
  const faults = faultsOf(scenario)
  const kinds: HourFigures['kinds'] = {}
  let detected = 0
  let reconnects = 0
  let reconnectIncidents = 0
  const explained = new Set<Opened>()
  let masked = 0
  for (const fault of faults) {
    const rule = FINDS[fault.kind]
    const perTask = fault.kind !== 'forgotten-start' && fault.taskId !== null
    const mine = opened.filter(
      (o) => o.rule === rule && o.serviceCode === fault.serviceCode && (!perTask || o.taskId === fault.taskId),
    )
    const until = (fault.untilMs ?? fault.fromMs + GRACE_MS) + FOR_MS + 2 * POLL_MS + STALE_MS
    const inside = mine.filter((o) => o.at >= fault.fromMs && o.at <= until)
    const hit = inside[0] ?? mine.find((o) => o.at < fault.fromMs && (o.resolvedAt ?? Infinity) > fault.fromMs)
    // Every opening inside the fault is its (a stale list in a stall resolves it, and it opens again after).
    for (const o of inside) explained.add(o)
    if (fault.kind === 'reconnect') {
      reconnects++
      if (hit && (fault.untilMs ?? 0) - fault.fromMs < FOR_MS) reconnectIncidents++
      continue
    }
    // A task's fault while its code's list is stale cannot be seen: livegate has no sample of it.
    const end = fault.untilMs ?? fault.fromMs
    const hidden = (f: PlannedFault) =>
      f.kind === 'stale-list' &&
      f.serviceCode === fault.serviceCode &&
      f.fromMs < end + FOR_MS &&
      (f.untilMs ?? 0) > fault.fromMs
    if (fault.taskId !== null && faults.some(hidden)) {
      masked++
      for (const o of mine) if (o.at >= fault.fromMs && o.at <= until) explained.add(o)
      continue
    }
    const kind = (kinds[fault.kind] ??= { faults: 0, detected: 0, latencies: [] })
    kind.faults++
    if (!hit) continue
    explained.add(hit)
    kind.detected++
    detected++
    // A stale list is a fault of the signal's own definition (`upstream(code).stale`: no success for
    // staleAfterMs): it appears in the data when the list is stale, after its last success.
    const appears =
      fault.kind === 'stale-list' ? Math.ceil(fault.fromMs / POLL_MS) * POLL_MS - POLL_MS + STALE_MS : fault.fromMs
    // A reconnect that begins inside a task fault's first `for` breaks its condition (the task is
    // RECONNECTING, not STARVING): the rule rightly starts its `for` again, so the bound cannot apply.
    const broken =
      fault.taskId !== null &&
      faults.some(
        (f) =>
          f.kind === 'reconnect' &&
          f.taskId === fault.taskId &&
          f.fromMs >= fault.fromMs &&
          f.fromMs < fault.fromMs + FOR_MS + POLL_MS,
      )
    if (broken) kind.interrupted = (kind.interrupted ?? 0) + 1
    else if (hit.at >= fault.fromMs) kind.latencies.push(hit.at - appears)
  }
  // A stall's bits/s fall too: weak-input opening inside a stall is explained by it.
  for (const o of opened) {
    if (o.rule !== 'weak-input' || explained.has(o)) continue
    if (faults.some((f) => f.kind === 'stall' && f.taskId === o.taskId && o.at >= f.fromMs)) explained.add(o)
  }
  const counted = faults.filter((fault) => fault.kind !== 'reconnect').length - masked
  // The scenario's first and last minute have no audience at all: what audience-drop rightly finds there is no fault.
  const edges = (o: Opened) => o.rule === 'audience-drop' && (o.at < 60_000 || o.at > scenario.durationMs - 60_000)
  const keys = opened.map((o) => JSON.stringify([o.rule, o.serviceCode, o.taskId, o.at]))
  return {
    sessions: scenario.sessions.length,
    faults: counted,
    detected,
    kinds,
    reconnects,
    reconnectIncidents,
    duplicates: keys.length - new Set(keys).size + overlapping(opened),
    unexplained: opened.filter((o) => o.rule !== 'reconnecting' && !explained.has(o) && !edges(o)).length,
    masked,
    passes,
  }
}

// Two incidents of one rule and subject open at once: what the database's rule forbids.
function overlapping(opened: Opened[]): number {
  let n = 0
  const bySubject = new Map<string, Opened[]>()
  for (const o of opened) bySubject.set(key(o), [...(bySubject.get(key(o)) ?? []), o])
  for (const list of bySubject.values()) {
    for (let i = 1; i < list.length; i++) if ((list[i - 1]?.resolvedAt ?? Infinity) > (list[i]?.at ?? 0)) n++
  }
  return n
}
