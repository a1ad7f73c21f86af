import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseCallback } from '../../src/model/callback.parse.js'
import { generateScenario, type Scenario } from '../../src/simulator/session.scenario.js'
import { seededRandom } from '../../src/model/seeded.random.js'
import { taskListAt } from '../../src/simulator/task-list.snapshot.js'
import { taskListAnswerSchema } from '../../src/model/task-list.schema.js'

const scenario = (seed: number, sessions = 8, epochMs = 1_700_000_000_000) =>
  generateScenario({ seed, sessions, serviceCodes: ['TESTING', 'OTHER'], rate: 50, epochMs })

/** Every rule a task's callbacks keep, as a list of broken ones (empty when all hold). */
function brokenRules(generated: Scenario): string[] {
  const broken: string[] = []
  for (const session of generated.sessions) {
    const own = generated.callbacks.filter((callback) => callback.taskId === session.taskId && callback.type !== 8)
    const starts = own.filter((c) => c.type === 0)
    const ends = own.filter((c) => c.type === 1)
    const where = `${session.taskId} (${session.ending})`
    if (starts.length !== session.outputs.length)
      broken.push(`${where}: ${starts.length} starts for ${session.outputs.length} outputs`)
    const firstEnd = own.findIndex((c) => c.type === 1)
    const lastStart = own.findLastIndex((c) => c.type === 0)
    if (firstEnd >= 0 && firstEnd < lastStart) broken.push(`${where}: a type 1 before a type 0`)
    const firstOther = own.findIndex((c) => c.type !== 0)
    if (firstOther >= 0 && firstOther < lastStart) broken.push(`${where}: an event before the live start`)
    let waiting = false
    for (const resume of own.filter((c) => c.type === 15)) {
      if (resume.fields.status === '1' && !waiting) broken.push(`${where}: a resume without a disconnect before it`)
      waiting = resume.fields.status === '0'
    }
    // output_idx: every output ends once, in order, with the tag and format it started with.
    const indexes = ends.map((c) => Number(c.fields.output_idx))
    if (session.ending === 'VANISHED') {
      if (ends.length > 0) broken.push(`${where}: a vanished session sent type 1`)
    } else {
      if (indexes.join() !== session.outputs.map((o) => o.index).join())
        broken.push(`${where}: output_idx ${indexes.join()}`)
      for (const end of ends) {
        const start = starts[Number(end.fields.output_idx)]
        if (start?.fields.tag !== end.fields.tag || start?.fields.format !== end.fields.format)
          broken.push(`${where}: output ${end.fields.output_idx} changed`)
        if (end.fields.reach_end !== (session.ending === 'USER_STOPPED' ? '1' : '0'))
          broken.push(`${where}: reach_end ${end.fields.reach_end}`)
      }
    }
    for (const archive of own.filter((c) => c.type === 2)) {
      if (!(Number(archive.fields.output_idx) < session.outputs.length))
        broken.push(`${where}: archive of output ${archive.fields.output_idx}`)
    }
    if (session.liveOnly && own.some((c) => c.type === 2)) broken.push(`${where}: a live-only session archived`)
    if (session.listedUntilMs <= session.listedFromMs) broken.push(`${where}: never listed`)
  }
  return broken
}

describe('generateScenario', () => {
  it('gives the same scenario for the same seed, and another for another seed', () => {
    expect(scenario(7)).toEqual(scenario(7))
    expect(scenario(8).sessions.map((s) => s.taskId)).not.toEqual(scenario(7).sessions.map((s) => s.taskId))
    expect(JSON.stringify(scenario(8).callbacks)).not.toBe(JSON.stringify(scenario(7).callbacks))
  })

  it('draws task ids and events from the seed alone, not from the epoch or the rate', () => {
    const a = scenario(3)
    const b = generateScenario({
      seed: 3,
      sessions: 8,
      serviceCodes: ['TESTING', 'OTHER'],
      rate: 5000,
      epochMs: 1_800_000_000_000,
    })
    // Rounding to whole milliseconds may interleave two tasks differently; each task's own order stays.
    const perTask = (generated: Scenario) =>
      generated.sessions.map((s) => [
        s.taskId,
        generated.callbacks.filter((c) => c.taskId === s.taskId).map((c) => c.type),
      ])
    expect(perTask(b)).toEqual(perTask(a))
  })

  it(
    'makes callbacks that parseCallback accepts, with ' + 'created_at in seconds and hashed ids in the service style',
    () => {
      const generated = scenario(11, 12)
      expect(generated.callbacks.length).toBeGreaterThan(12)
      for (const callback of generated.callbacks) {
        const verdict = parseCallback(callback.fields)
        expect(verdict.ok, `${JSON.stringify(callback.fields)}: ${verdict.ok ? '' : verdict.error.message}`).toBe(true)
        if (verdict.ok) expect(verdict.callback.unreadable).toEqual([])
        if (callback.fields.created_at) expect(callback.fields.created_at).toMatch(/^\d{10}$/)
      }
      for (const session of generated.sessions) expect(session.taskId).toMatch(/^aws-cn_north_1-\d-[0-9a-f]{16}$/)
    },
  )

  it('has every ending, and a flv output with a time-shift address', () => {
    const generated = scenario(5, 6)
    expect(new Set(generated.sessions.map((s) => s.ending))).toEqual(new Set(['USER_STOPPED', 'ABNORMAL', 'VANISHED']))
    const starts = generated.callbacks.filter((c) => c.type === 0)
    expect(
      starts.some((c) => c.fields.format === 'flv/libx264/aac' && c.fields.svod_url?.endsWith('.flv?live=1')),
    ).toBe(true)
    expect(starts.every((c) => (c.fields.svod_url !== undefined) === c.fields.format?.startsWith('flv/'))).toBe(true)
  })

  it('spreads the callbacks over the time the rate gives them', () => {
    const generated = generateScenario({ seed: 2, sessions: 10, serviceCodes: ['TESTING'], rate: 20 })
    const expectedMs = (generated.callbacks.length / 20) * 1000
    expect(generated.durationMs).toBeGreaterThan(expectedMs * 0.9)
    expect(generated.durationMs).toBeLessThan(expectedMs * 1.1)
    const times = generated.callbacks.map((c) => c.atMs)
    expect(times).toEqual([...times].sort((a, b) => a - b))
  })

  it('keeps every rule of a task for any seed', () => {
    fc.assert(
      fc.property(fc.integer(), fc.integer({ min: 0, max: 12 }), (seed, sessions) => {
        expect(brokenRules(generateScenario({ seed, sessions, serviceCodes: ['TESTING'], rate: 10 }))).toEqual([])
      }),
      { numRuns: 200 },
    )
  })

  it('refuses options it cannot play', () => {
    expect(() => generateScenario({ seed: 1, sessions: 1, serviceCodes: ['TESTING'], rate: 0 })).toThrow(RangeError)
    expect(() => generateScenario({ seed: 1, sessions: 1.5, serviceCodes: ['TESTING'], rate: 1 })).toThrow(RangeError)
    expect(() => generateScenario({ seed: 1, sessions: 1, serviceCodes: [], rate: 1 })).toThrow(RangeError)
    expect(generateScenario({ seed: 1, sessions: 0, serviceCodes: [], rate: 1 })).toMatchObject({
      sessions: [],
      callbacks: [],
      durationMs: 0,
    })
  })
})

describe('taskListAt', () => {
  it('lists a task from its start until it ends or vanishes, in the task_list shape', () => {
    const generated = scenario(9, 6)
    for (const session of generated.sessions) {
      const ids = (atMs: number) => taskListAt(generated, session.serviceCode, atMs).task_list.map((t) => t.id)
      expect(ids(session.listedFromMs - 1)).not.toContain(session.taskId)
      expect(ids(session.listedFromMs)).toContain(session.taskId)
      expect(ids(session.listedUntilMs - 1)).toContain(session.taskId)
      expect(ids(session.listedUntilMs)).not.toContain(session.taskId)
      const mid = Math.floor((session.liveFromMs + session.listedUntilMs) / 2)
      const answer = { ret: 0, ...taskListAt(generated, session.serviceCode, mid) }
      expect(taskListAnswerSchema.parse(answer)).toEqual(answer)
      const task = answer.task_list.find((t) => t.id === session.taskId)
      expect(Object.keys(task ?? {}).sort()).toEqual(
        [
          'id',
          'serial',
          'sequence',
          'progress',
          'vs_id',
          'service_code',
          'outputs',
          'inputs',
          'http_live_url',
          'input_bytes',
          'opaque',
        ].sort(),
      )
      expect(task?.outputs).toHaveLength(session.outputs.length)
      expect(answer.user_list.map((u) => u.user_name)).toContain(session.author)
    }
  })

  it('lists only the asked service code, and each user once', () => {
    const generated = scenario(4, 10)
    for (let atMs = 0; atMs <= generated.durationMs; atMs += 50) {
      const answer = taskListAt(generated, 'TESTING', atMs)
      expect(answer.task_list.every((t) => t.service_code === 'TESTING')).toBe(true)
      const names = answer.user_list.map((u) => u.user_name)
      expect(new Set(names).size).toBe(names.length)
    }
    expect(taskListAt(generated, 'TESTING', generated.durationMs + 1)).toEqual({ task_list: [], user_list: [] })
  })
})

describe('seededRandom', () => {
  it('repeats for a seed and stays in range', () => {
    const a = seededRandom(42)
    const b = seededRandom(42)
    const draws = Array.from({ length: 1000 }, () => a.next())
    expect(draws).toEqual(Array.from({ length: 1000 }, () => b.next()))
    expect(draws.every((n) => n >= 0 && n < 1)).toBe(true)
    expect(seededRandom(43).next()).not.toBe(draws[0])
  })
})
