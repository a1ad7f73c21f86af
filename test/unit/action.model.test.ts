import { describe, expect, it } from 'vitest'
import { deriveTask } from '../../src/fold/task.derive.js'
import {
  applyTaskCallback,
  applyTaskSighting,
  applyTaskStop,
  emptyTaskState,
  type TaskState,
} from '../../src/fold/task.fold.js'
import { argsFingerprint, cloudCallOf, textProblem } from '../../src/model/action.model.js'
import { parseCallback } from '../../src/model/callback.parse.js'
import { sign, verifySignature } from '../../src/model/signature.verify.js'
import { decideRate } from '../../src/work/outbound/action.limiter.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'

describe("an action's cloud call", () => {
  it('a stop: cancel_task with service_code and task_id, signed over the query as written', () => {
    const call = cloudCallOf({ kind: 'STOP_TASK', serviceCode: 'TESTING', taskId: 'aws-cn_north_1-5-a6eaff8eeef36a3b' })
    expect(call).toEqual({
      path: '/api/20140928/cancel_task',
      signedQuery: 'service_code=TESTING&task_id=aws-cn_north_1-5-a6eaff8eeef36a3b',
      sentQuery: 'service_code=TESTING&task_id=aws-cn_north_1-5-a6eaff8eeef36a3b',
    })
  })

  it('a message: send_txt_msg, its values signed raw and sent percent-encoded, and the receiver verifies it', () => {
    const call = cloudCallOf({
      kind: 'SEND_MESSAGE',
      serviceCode: 'TESTING',
      userName: 'bob',
      text: 'input starving & 50% lost',
      from: 'ops desk',
    })
    expect(call.path).toBe('/api/20140928/send_txt_msg')
    expect(call.signedQuery).toBe(
      'service_code=TESTING&dst_username=bob&message=input starving & 50% lost&from_username=ops desk',
    )
    expect(call.sentQuery).toBe(
      'service_code=TESTING&dst_username=bob&message=input%20starving%20%26%2050%25%20lost&from_username=ops%20desk',
    )
    const timestamp = '1443494296533'
    const signature = sign({ path: call.path, query: call.signedQuery, body: '', timestamp }, 'abc')
    const verdict = verifySignature({
      path: call.path,
      rawQuery: call.sentQuery,
      body: new Uint8Array(0),
      signatureHeader: signature,
      timestampHeader: timestamp,
      secrets: ['abc'],
      nowMs: 1443494296533,
      toleranceMs: 300_000,
    })
    expect(verdict).toEqual({ ok: true, secretIndex: 0 })
  })

  it('refuses what the cloud cannot carry, naming the argument', () => {
    expect(textProblem('text', 'two\nlines')).toMatch(/^text may not contain control characters/)
    expect(textProblem('text', 'tab\there')).toMatch(/control characters/)
    expect(textProblem('text', 'line\u2028separator')).toMatch(/control characters/)
    expect(textProblem('userName', '')).toBe('userName may not be empty.')
    expect(textProblem('userName', '   ')).toBe('userName may not be empty.')
    expect(textProblem('text', 'x'.repeat(1001))).toBe('text may be at most 1000 characters; got 1001.')
    expect(textProblem('text', '表'.repeat(1000))).toBeUndefined()
    expect(textProblem('text', 'your input is starving 🎥')).toBeUndefined()
  })

  it('fingerprints the arguments: equal for equal requests, different otherwise', () => {
    const stop = { kind: 'STOP_TASK', serviceCode: 'A', taskId: 't' } as const
    expect(argsFingerprint(stop)).toBe(argsFingerprint({ ...stop }))
    expect(argsFingerprint(stop)).not.toBe(argsFingerprint({ ...stop, taskId: 'u' }))
  })
})

describe('a stop in the fold', () => {
  const TASK = 'aws-cn_north_1-5-a6eaff8eeef36a3b'
  const samples = sampleCallbacks(TASK)
  const callback = (fields: Record<string, string>, at: number, key: string) => {
    const parsed = parseCallback(fields)
    if (!parsed.ok) throw new Error(parsed.error.message)
    return { source: 'callback' as const, stamp: { at, key }, receivedAt: at, callback: parsed.callback }
  }
  const start = callback(samples.liveStart as Record<string, string>, 1_000, 'start')
  const end = callback({ ...samples.liveEnd, reach_end: '0' } as Record<string, string>, 3_000, 'end')
  type Step = (state: TaskState) => TaskState
  const steps: Record<string, Step> = {
    start: (s) => applyTaskCallback(s, start),
    stop: (s) => applyTaskStop(s, 2_000),
    end: (s) => applyTaskCallback(s, end),
  }
  const run = (order: string[]) =>
    order.reduce((state, name) => (steps[name] as Step)(state), emptyTaskState('TESTING', TASK))

  it('stays LIVE after an accepted stop until the cloud says it ended, then ends STOPPED, in any order', () => {
    expect(deriveTask(run(['start', 'stop']))).toMatchObject({ status: 'LIVE', endReason: null })
    for (const order of [
      ['start', 'stop', 'end'],
      ['end', 'stop', 'start'],
      ['stop', 'start', 'end', 'stop'],
      ['start', 'end', 'stop'],
    ]) {
      expect(deriveTask(run(order)), order.join(',')).toMatchObject({
        status: 'ENDED',
        endReason: 'STOPPED',
        endedAt: new Date(3_000),
      })
    }
    expect(deriveTask(run(['start', 'end']))).toMatchObject({ status: 'ENDED', endReason: 'ABNORMAL' })
  })

  it('a task that leaves the list after a stop is STOPPED too', () => {
    const listed = applyTaskSighting(run(['start', 'stop']), {
      source: 'sighting',
      serviceCode: 'TESTING',
      taskId: TASK,
      takenAt: 1_500,
      task: { id: TASK } as never,
    })
    const gone = applyTaskSighting(listed, {
      source: 'sighting',
      serviceCode: 'TESTING',
      taskId: TASK,
      takenAt: 2_500,
      task: null,
    })
    expect(deriveTask(gone)).toMatchObject({ status: 'ENDED', endReason: 'STOPPED' })
  })
})

describe('the per-key rate of actions', () => {
  it('allows the limit in a window, refuses beyond it, and tells the first refusal since the last allowed apart', () => {
    const at = (ms: number) => new Date(ms)
    expect(decideRate(2, { taken: 1, lastTakenAt: at(5), lastRefusedAt: at(9) })).toBe('allowed')
    expect(decideRate(2, { taken: 2, lastTakenAt: at(5), lastRefusedAt: null })).toBe('first-refusal')
    expect(decideRate(2, { taken: 2, lastTakenAt: at(5), lastRefusedAt: at(6) })).toBe('refused')
    expect(decideRate(2, { taken: 2, lastTakenAt: at(7), lastRefusedAt: at(6) })).toBe('first-refusal')
    // A refused attempt recorded as the first refusal is one row past the limit.
    expect(decideRate(2, { taken: 3, lastTakenAt: at(7), lastRefusedAt: null })).toBe('refused')
  })
})
