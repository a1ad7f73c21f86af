import { describe, expect, it } from 'vitest'
import type { CallbackEvent, TaskSightingEvent } from '../../src/fold/fold.event.js'
import { applyTaskCallback, applyTaskSighting, emptyTaskState, type TaskState } from '../../src/fold/task.fold.js'
import { deriveStatus } from '../../src/fold/task.derive.js'
import { sampledTransitions, taskTransitions } from '../../src/fold/task.transitions.js'
import { parseCallback } from '../../src/model/callback.parse.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'

const TASK = 'transitions-task'
const samples = sampleCallbacks(TASK)
const NOW = new Date('2026-11-25T12:00:00Z')

let keySeq = 0
function event(fields: Record<string, string>, at: number): CallbackEvent {
  const parsed = parseCallback(fields)
  if (!parsed.ok) throw new Error(parsed.error.message)
  return { source: 'callback', stamp: { at, key: `k${keySeq++}` }, receivedAt: at + 5, callback: parsed.callback }
}
const sighting = (at: number, listed: boolean): TaskSightingEvent => ({
  source: 'sighting',
  serviceCode: 'TESTING',
  taskId: TASK,
  takenAt: at,
  task: listed ? { id: TASK, vs_id: 'xvs-5', service_code: 'TESTING', input_bytes: 1, inputs: [], outputs: [] } : null,
})
const empty = () => emptyTaskState('TESTING', TASK)
const withCallback = (state: TaskState, fields: Record<string, string>, at: number) =>
  applyTaskCallback(state, event(fields, at))
const types = (before: TaskState | undefined, after: TaskState) =>
  taskTransitions(before, after, NOW).map((derived) => [derived.type, derived.facts.endReason ?? null])

describe('what a fold tells the outside world', () => {
  it('tells a start once, and an end with its reason', () => {
    const started = withCallback(empty(), samples.liveStart as Record<string, string>, 1000)
    expect(types(undefined, started)).toEqual([['task.started', null]])
    const again = withCallback(started, samples.liveStart as Record<string, string>, 1500)
    expect(types(started, again)).toEqual([])
    const ended = withCallback(started, samples.liveEnd as Record<string, string>, 2000)
    expect(types(started, ended)).toEqual([['task.ended', 'USER_STOPPED']])
  })

  it('does not tell a resume as a start', () => {
    const started = withCallback(empty(), samples.liveStart as Record<string, string>, 1000)
    const waiting = withCallback(started, samples.liveResume as Record<string, string>, 2000)
    expect(types(started, waiting)).toEqual([])
    const resumed = withCallback(waiting, { ...(samples.liveResume as Record<string, string>), status: '1' }, 3000)
    expect(deriveStatus(resumed).status).toBe('LIVE')
    expect(types(waiting, resumed)).toEqual([])
  })

  it('tells a task that left the list without a type 1 as ended, VANISHED', () => {
    const listed = applyTaskSighting(empty(), sighting(1000, true))
    expect(types(undefined, listed)).toEqual([['task.started', null]])
    const gone = applyTaskSighting(listed, sighting(2000, false))
    expect(types(listed, gone)).toEqual([['task.ended', 'VANISHED']])
    const derived = taskTransitions(listed, gone, NOW)[0]
    expect(derived).toMatchObject({
      serviceCode: 'TESTING',
      taskId: TASK,
      occurredAt: NOW,
      facts: { status: 'ENDED', endReason: 'VANISHED' },
    })
  })

  it('tells health changes and missing callbacks with their reasons', () => {
    const events = sampledTransitions(
      'TESTING',
      {
        healthChanges: [{ taskId: TASK, from: 'HEALTHY', to: 'STARVING' }],
        missing: [{ taskId: TASK, kind: 'LIVE_START' }],
      },
      NOW,
      12_000,
    )
    expect(events.map((derived) => [derived.type, derived.facts])).toEqual([
      [
        'task.health_changed',
        { from: 'HEALTHY', to: 'STARVING', reason: 'its input bytes did not grow between two task_list answers' },
      ],
      [
        'task.callback_missing',
        { kind: 'LIVE_START', graceMs: 12_000, reason: 'listed live with no type 0 within the grace' },
      ],
    ])
  })
})
