import type { Scenario, ServiceFault } from './scenario.model.js'

/**
 * The faults a scenario plays, with their ground truth: what the alert rules should find and
 * when it began in the cloud's data. A task's faults are its audience's (audience.plan.ts); a
 * service code's are planned here by place, drawing nothing from the seed's random stream, so task
 * ids and every other event stay the seed's alone.
 */

/** What one fault is, as a test or the bench reads it. */
export type FaultKind = 'stall' | 'starving-input' | 'forgotten-start' | 'audience-drop' | 'stale-list' | 'reconnect'

/** One planned fault; times from the scenario's start. */
export interface PlannedFault {
  kind: FaultKind
  serviceCode: string
  /** The task's; null for a whole service code's fault. */
  taskId: string | null
  /** When it begins in the cloud's data (a reconnect: its type 15 status 0; a forgotten start: its first listing). */
  fromMs: number
  /** When it ends (a reconnect: its type 15 status 1); null when only the task's end ends it. */
  untilMs: number | null
}

/** How a task list answers while stale: the fault the task_list server plays. */
export interface ListFault {
  status?: number
  delayMs?: number
}

/**
 * A code's faults, `perCode` times each, spread evenly over the scenario: in each stretch its
 * audience drops away for a tenth of it (from 10%, 20% or 30%, by the code's place) and its list
 * goes stale for a tenth (from 55%, 65% or 75%), failing by errors and by hanging in turn.
 */
export function planServiceFaults(codes: readonly string[], durationMs: number, perCode: number): ServiceFault[] {
  const faults: ServiceFault[] = []
  if (!(perCode > 0) || durationMs <= 0) return faults
  const stretch = durationMs / perCode
  const at = (k: number, share: number) => Math.round((k + share) * stretch)
  codes.forEach((serviceCode, c) => {
    for (let k = 0; k < perCode; k++) {
      // Codes in turn a tenth apart, so one code's fault is seen beside another's good answers.
      const turn = 0.1 * (c % 3)
      faults.push({ kind: 'audience-drop', serviceCode, fromMs: at(k, 0.1 + turn), untilMs: at(k, 0.2 + turn) })
      const mode = (k + c) % 2 === 0 ? 'errors' : 'hangs'
      faults.push({ kind: 'stale-list', serviceCode, fromMs: at(k, 0.55 + turn), untilMs: at(k, 0.65 + turn), mode })
    }
  })
  return faults
}

/** Whether a code's audience has dropped away `atMs` after the scenario's start. */
export function audienceDropped(scenario: Scenario, serviceCode: string, atMs: number): boolean {
  return active(scenario, 'audience-drop', serviceCode, atMs) !== undefined
}

/** How the code's task list answers `atMs` after the scenario's start: undefined while it answers well. */
export function listFaultAt(scenario: Scenario, serviceCode: string, atMs: number): ListFault | undefined {
  const fault = active(scenario, 'stale-list', serviceCode, atMs)
  if (!fault) return undefined
  // Hanging, it answers nothing until its window ends (a client times out long before).
  return fault.mode === 'hangs' ? { delayMs: fault.untilMs - atMs } : { status: 503 }
}

function active(scenario: Scenario, kind: ServiceFault['kind'], code: string, atMs: number) {
  const now = (f: ServiceFault) => f.fromMs <= atMs && atMs < f.untilMs
  return scenario.serviceFaults?.find((f) => f.kind === kind && f.serviceCode === code && now(f))
}

/** Every fault the scenario plays, in time order: the ground truth. */
export function faultsOf(scenario: Scenario): PlannedFault[] {
  const faults: PlannedFault[] = []
  for (const session of scenario.sessions) {
    const subject = { serviceCode: session.serviceCode, taskId: session.taskId }
    const audience = session.audience
    if (audience?.stall) faults.push({ kind: 'stall', ...subject, ...audience.stall })
    if (audience?.thin) faults.push({ kind: 'starving-input', ...subject, ...audience.thin })
    const listed = { fromMs: session.listedFromMs, untilMs: null }
    if (audience?.forgetsStart) faults.push({ kind: 'forgotten-start', ...subject, ...listed })
  }
  // A reconnect: a type 15 status 0, resumed by the next status 1 of the same task.
  const waiting = new Map<string, number>()
  for (const callback of scenario.callbacks) {
    if (callback.type !== 15) continue
    const key = JSON.stringify([callback.serviceCode, callback.taskId])
    const since = waiting.get(key)
    if (callback.fields.status === '0' && since === undefined) waiting.set(key, callback.atMs)
    if (callback.fields.status === '1' && since !== undefined) {
      const { serviceCode, taskId } = callback
      faults.push({ kind: 'reconnect', serviceCode, taskId, fromMs: since, untilMs: callback.atMs })
      waiting.delete(key)
    }
  }
  for (const fault of scenario.serviceFaults ?? []) {
    const { kind, serviceCode, fromMs, untilMs } = fault
    faults.push({ kind, serviceCode, taskId: null, fromMs, untilMs })
  }
  return faults.sort((a, b) => a.fromMs - b.fromMs)
}
