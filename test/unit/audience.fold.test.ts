import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type LiveTask, sampleAnswer } from '../../src/fold/answer.sample.js'
import { counterStep, reconcile } from '../../src/fold/sample.rules.js'
import { type HealthTrack, nextHealth, taskHealth } from '../../src/fold/task.health.js'
import { taskListAnswerSchema } from '../../src/model/task-list.schema.js'
import { generateScenario } from '../../src/simulator/session.scenario.js'
import { countersAt } from '../../src/simulator/scenario.model.js'

const counter = fc.option(fc.integer({ min: 0, max: 2 ** 52 }), { nil: null })

describe('counterStep', () => {
  it('is never negative and never a spike: a counter that went down gives no step', () => {
    fc.assert(
      fc.property(
        counter,
        counter,
        fc.integer({ min: 0, max: 1e12 }),
        fc.integer({ min: -1e6, max: 1e7 }),
        (before, after, at, dt) => {
          const step = counterStep({ bytes: before, at }, { bytes: after, at: at + dt })
          if (step === null)
            return before === null || after === null || dt <= 0 || (after as number) < (before as number)
          return (
            step.rate >= 0 &&
            step.bytes === (after as number) - (before as number) &&
            step.seconds === dt / 1000 &&
            step.rate === (step.bytes * 8) / step.seconds
          )
        },
      ),
    )
  })

  it('gives no step without a previous sample', () => {
    expect(counterStep(undefined, { bytes: 10, at: 5 })).toBeNull()
  })
})

describe('health', () => {
  it('is STARVING exactly while the input bytes did not grow since the sample before, HEALTHY otherwise', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 5 }), { minLength: 1, maxLength: 30 }), (deltas) => {
        let track: HealthTrack | undefined
        let bytes = 100
        let at = 0
        for (const [index, delta] of deltas.entries()) {
          bytes += delta
          at += 1000
          const before: HealthTrack | undefined = track
          track = nextHealth(track, bytes, at)
          const expected = index > 0 && delta === 0 ? 'STARVING' : 'HEALTHY'
          if (track.health !== expected) return false
          // `since` moves only when the state changes.
          if (before && before.health === track.health && before.since !== track.since) return false
          // A stall dates from the sample whose bytes the new one repeats; growth from the new one.
          if (
            before &&
            before.health !== track.health &&
            track.since !== (track.health === 'STARVING' ? at - 1000 : at)
          )
            return false
        }
        return true
      }),
    )
  })

  it('a counter reset is the input being fed again, and a sample without input bytes changes nothing', () => {
    const starving = nextHealth(nextHealth(undefined, 50, 0), 50, 1000)
    expect(starving.health).toBe('STARVING')
    expect(nextHealth(starving, 3, 2000).health).toBe('HEALTHY')
    expect(nextHealth(starving, null, 2000)).toMatchObject({ health: 'STARVING', since: 0 })
  })

  it('reads the life first: ended, reconnecting, then unknown without fresh samples', () => {
    const sampled = { health: 'STARVING' as const, since: 5 }
    const base = { status: 'LIVE' as const, listed: true, endedAt: null, waitingSince: null, sampled, stale: false }
    expect(taskHealth(base).state).toBe('STARVING')
    expect(taskHealth({ ...base, status: 'ENDED', endedAt: 9 })).toMatchObject({ state: 'ENDED', since: 9 })
    expect(taskHealth({ ...base, status: 'WAITING_RECONNECT', waitingSince: 7 })).toMatchObject({
      state: 'RECONNECTING',
      since: 7,
    })
    expect(taskHealth({ ...base, stale: true }).state).toBe('UNKNOWN')
    expect(taskHealth({ ...base, sampled: undefined }).state).toBe('UNKNOWN')
    expect(taskHealth({ ...base, listed: false }).state).toBe('UNKNOWN')
  })
})

describe('reconcile', () => {
  it('settles each check once: missing only when the grace passed with no callback, never counted again', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            dt: fc.integer({ min: 0, max: 20_000 }),
            start: fc.boolean(),
            end: fc.boolean(),
            leave: fc.boolean(),
          }),
          { maxLength: 20 },
        ),
        fc.integer({ min: 0, max: 30_000 }),
        (steps, graceMs) => {
          let track = { firstListedAt: 0, leftAt: null as number | null, startChecked: false, endChecked: false }
          let now = 0
          let starts = 0
          let ends = 0
          let hasStart = false
          let hasEnd = false
          for (const step of steps) {
            now += step.dt
            hasStart ||= step.start
            hasEnd ||= step.end
            if (step.leave && track.leftAt === null) track = { ...track, leftAt: now }
            const out = reconcile(track, { hasStart, hasEnd }, now, graceMs)
            if (out.missingStart) {
              starts++
              if (hasStart || now < graceMs) return false
            }
            if (out.missingEnd) {
              ends++
              if (hasEnd || track.leftAt === null || now < track.leftAt + graceMs) return false
            }
            track = { ...track, startChecked: out.startChecked, endChecked: out.endChecked }
          }
          return starts <= 1 && ends <= 1
        },
      ),
    )
  })
})

const answerOf = (tasks: Array<{ id: string; input?: number; viewers?: number[]; out?: number[] }>) =>
  taskListAnswerSchema.parse({
    ret: 0,
    task_list: tasks.map((t) => ({
      id: t.id,
      input_bytes: t.input,
      outputs: (t.viewers ?? []).map((v, i) => ({
        tag: `o${i}`,
        format: 'flv',
        http_connections_num: v,
        http_output_bytes: t.out?.[i],
      })),
    })),
  })

describe('sampleAnswer', () => {
  it("yields a sample per listed task once, viewers the sum of the outputs, and the code's totals", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({ id: fc.constantFrom('a', 'b', 'c', 'd'), viewers: fc.array(fc.nat(5000), { maxLength: 3 }) }),
          { maxLength: 8 },
        ),
        (tasks) => {
          const samples = sampleAnswer('S', answerOf(tasks), 1000, new Map(), new Map(), 5000)
          const ids = [...new Set(tasks.map((t) => t.id))]
          expect(samples.tasks.map((t) => t.taskId)).toEqual(ids)
          for (const sample of samples.tasks) {
            const first = tasks.find((t) => t.id === sample.taskId)
            expect(sample.viewers).toBe((first?.viewers ?? []).reduce((a, b) => a + b, 0))
          }
          expect(samples.service).toMatchObject({
            liveTasks: ids.length,
            viewers: samples.tasks.reduce((n, t) => n + t.viewers, 0),
          })
        },
      ),
    )
  })

  it('gives rates from the previous sample, none across a reset, and marks a task that left', () => {
    const first = sampleAnswer(
      'S',
      answerOf([{ id: 'a', input: 1000, viewers: [3], out: [500] }]),
      10_000,
      new Map(),
      new Map(),
      60_000,
    )
    const before = new Map<string, LiveTask>(first.live.map((row) => [row.taskId, row]))
    const second = sampleAnswer(
      'S',
      answerOf([{ id: 'a', input: 2000, viewers: [4], out: [100] }]),
      15_000,
      before,
      new Map(),
      60_000,
    )
    expect(second.tasks[0]?.input).toEqual({ bytes: 1000, seconds: 5, rate: 1600 })
    expect(second.tasks[0]?.output).toBeNull()
    expect(second.service.seconds).toBe(5)
    const third = sampleAnswer(
      'S',
      answerOf([]),
      20_000,
      new Map(second.live.map((row) => [row.taskId, row])),
      new Map(),
      60_000,
    )
    expect(third.live).toMatchObject([{ taskId: 'a', listed: false, leftAt: 20_000, peakViewers: 4 }])
    expect(third.service).toMatchObject({ liveTasks: 0, viewers: 0 })
  })

  it('finds a missing start once the grace has passed, and only once', () => {
    let before = new Map<string, LiveTask>()
    const missing: string[] = []
    for (let at = 0; at <= 30_000; at += 5000) {
      const samples = sampleAnswer('S', answerOf([{ id: 'a', input: at }]), at, before, new Map(), 12_000)
      missing.push(...samples.missing.map((m) => `${m.taskId}:${m.kind}`))
      before = new Map(samples.live.map((row) => [row.taskId, row]))
    }
    expect(missing).toEqual(['a:LIVE_START'])
  })
})

describe("the simulator's audiences", () => {
  it(
    'shows audiences in the thousands, a stall, a reset and a ' + 'forgotten start; counters only go down at the reset',
    () => {
      const scenario = generateScenario({
        seed: 7,
        sessions: 8,
        serviceCodes: ['S'],
        rate: 20,
        epochMs: 1_700_000_000_000,
        audience: true,
      })
      const audiences = scenario.sessions.map((s) => s.audience)
      expect(audiences.some((a) => (a?.peak ?? 0) >= 1000)).toBe(true)
      expect(audiences.filter((a) => a?.stall)).toHaveLength(1)
      expect(audiences.filter((a) => a?.resetAtMs !== null)).toHaveLength(1)
      const forgetful = scenario.sessions.find((s) => s.audience?.forgetsStart)
      expect(forgetful).toBeDefined()
      expect(scenario.callbacks.some((c) => c.taskId === forgetful?.taskId && c.type === 0)).toBe(false)
      for (const session of scenario.sessions) {
        const flv = session.outputs.find((o) => o.container === 'flv')
        let last = { inputBytes: 0, httpOutputBytes: 0 }
        for (let at = session.liveFromMs; at < session.listedUntilMs; at += 37) {
          const now = countersAt(session, flv, at)
          const reset = session.audience?.resetAtMs ?? Infinity
          if (!(at >= reset && at - 37 < reset)) {
            expect(now.inputBytes).toBeGreaterThanOrEqual(last.inputBytes)
            expect(now.httpOutputBytes).toBeGreaterThanOrEqual(last.httpOutputBytes)
          }
          last = now
        }
      }
    },
  )
})
