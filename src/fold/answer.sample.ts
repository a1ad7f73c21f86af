import type { TaskListAnswer, UpstreamTask } from '../model/task-list.schema.js'
import { type CallbackFacts, type CounterStep, counterStep, reconcile, type ReconcileTrack } from './sample.rules.js'
import { type HealthTrack, nextHealth, type SampledHealth } from './task.health.js'
import { outputKey } from './task.fold.js'

/** What is kept of a task between two answers (a `task_live` row). */
export interface LiveTask extends HealthTrack, ReconcileTrack {
  taskId: string
  at: number
  listed: boolean
  viewers: number
  peakViewers: number
  outputBytes: number | null
  missingStartAt: number | null
  missingEndAt: number | null
}

/** One listed task at one answer, with its steps since its previous sample. */
export interface TaskSample {
  taskId: string
  at: number
  /** The sum of the outputs' `http_connections_num`: HTTP-flv connections only. */
  viewers: number
  inputBytes: number | null
  outputBytes: number | null
  input: CounterStep | null
  output: CounterStep | null
  /** Per output `[key, viewers, bytes]`. */
  outputs: Array<[string, number | null, number | null]>
}

/** One answer as a sample of its service code. */
export interface ServiceSample {
  at: number
  liveTasks: number
  viewers: number
  inputBytes: number
  /** Since the code's previous answer; 0 for its first. */
  seconds: number
}

/** Everything one answer yields, to be written in one statement. */
export interface AnswerSamples {
  serviceCode: string
  tasks: TaskSample[]
  service: ServiceSample
  /** The `task_live` rows to write: the listed tasks, those that left, those whose checks moved. */
  live: LiveTask[]
  /** Tasks whose sampled health changed (told to `taskChanged` subscribers). */
  healthChanged: string[]
  /** The same changes, with the health before and after (told to webhooks). */
  healthChanges: Array<{ taskId: string; from: SampledHealth; to: SampledHealth }>
  /** Callbacks found missing by this answer, each once. */
  missing: Array<{ taskId: string; kind: 'LIVE_START' | 'LIVE_END' }>
}

const sum = (values: ReadonlyArray<number | null | undefined>) =>
  values.reduce<number>((total, value) => total + (value ?? 0), 0)

/** What one upstream task says now: viewers, bytes, and per output. */
export function readTask(task: UpstreamTask): Pick<TaskSample, 'viewers' | 'inputBytes' | 'outputBytes' | 'outputs'> {
  const outputs = task.outputs.map((output): [string, number | null, number | null] => [
    outputKey(output.tag, output.format),
    output.http_connections_num ?? null,
    output.http_output_bytes ?? null,
  ])
  const reported = task.outputs.some((output) => output.http_output_bytes !== undefined)
  return {
    viewers: sum(outputs.map((o) => o[1])),
    inputBytes: task.input_bytes ?? null,
    outputBytes: reported ? sum(outputs.map((o) => o[2])) : null,
    outputs,
  }
}

/**
 * Samples one successful answer: a sample per listed task with its rates, the code's sample, the
 * new `task_live` rows (health and reconciliation), from the rows the previous answers left
 * (`before`: the code's listed tasks and those with a check pending) and what the callbacks said.
 */
export function sampleAnswer(
  serviceCode: string,
  answer: TaskListAnswer,
  at: number,
  before: ReadonlyMap<string, LiveTask>,
  callbacks: ReadonlyMap<string, CallbackFacts>,
  graceMs: number,
): AnswerSamples {
  const tasks: TaskSample[] = []
  const live: LiveTask[] = []
  const healthChanged: string[] = []
  const healthChanges: AnswerSamples['healthChanges'] = []
  const missing: AnswerSamples['missing'] = []
  const listed = new Set<string>()
  let previousAt = 0
  const settle = (row: LiveTask) => {
    const outcome = reconcile(row, callbacks.get(row.taskId) ?? { hasStart: false, hasEnd: false }, at, graceMs)
    if (outcome.missingStart) missing.push({ taskId: row.taskId, kind: 'LIVE_START' })
    if (outcome.missingEnd) missing.push({ taskId: row.taskId, kind: 'LIVE_END' })
    return {
      ...row,
      startChecked: outcome.startChecked,
      endChecked: outcome.endChecked,
      missingStartAt: outcome.missingStart ? at : row.missingStartAt,
      missingEndAt: outcome.missingEnd ? at : row.missingEndAt,
    }
  }
  for (const task of answer.task_list) {
    if (listed.has(task.id)) continue
    listed.add(task.id)
    const now = readTask(task)
    const prev = before.get(task.id)
    // A task that left and came back starts over: the gap is no step.
    const last = prev?.listed ? prev : undefined
    if (last) previousAt = Math.max(previousAt, last.at)
    const input = counterStep(last && { bytes: last.inputBytes, at: last.at }, { bytes: now.inputBytes, at })
    const output = counterStep(last && { bytes: last.outputBytes, at: last.at }, { bytes: now.outputBytes, at })
    tasks.push({ taskId: task.id, at, ...now, input, output })
    const health = nextHealth(last, now.inputBytes, at)
    if (last && health.health !== last.health) {
      healthChanged.push(task.id)
      healthChanges.push({ taskId: task.id, from: last.health, to: health.health })
    }
    live.push(
      settle({
        taskId: task.id,
        at,
        listed: true,
        viewers: now.viewers,
        peakViewers: Math.max(prev?.peakViewers ?? 0, now.viewers),
        outputBytes: now.outputBytes,
        ...health,
        firstListedAt: prev?.firstListedAt ?? at,
        leftAt: null,
        startChecked: prev?.startChecked ?? false,
        endChecked: prev?.endChecked ?? false,
        missingStartAt: prev?.missingStartAt ?? null,
        missingEndAt: prev?.missingEndAt ?? null,
      }),
    )
  }
  for (const row of before.values()) {
    if (listed.has(row.taskId)) continue
    const left = row.listed ? { ...row, listed: false, viewers: 0, leftAt: at } : row
    const next = settle(left)
    if (left !== row || next.startChecked !== row.startChecked || next.endChecked !== row.endChecked) live.push(next)
  }
  const service: ServiceSample = {
    at,
    liveTasks: tasks.length,
    viewers: sum(tasks.map((t) => t.viewers)),
    inputBytes: sum(tasks.map((t) => t.input?.bytes)),
    seconds: previousAt > 0 ? (at - previousAt) / 1000 : 0,
  }
  return { serviceCode, tasks, service, live, healthChanged, healthChanges, missing }
}
