import { describe, expect, it } from 'vitest'
import { type AlertRule, alertRules } from '../../src/config/alerts.schema.js'
import { loadConfig } from '../../src/config/index.js'
import {
  evaluateRules,
  type OpenIncident,
  type Readings,
  type TaskReading,
  type Tracks,
} from '../../src/fold/alert.evaluator.js'
import type { HealthState } from '../../src/fold/task.health.js'

// Time is a number handed in: each pass is "now", so no clock is waited on.
const rules = (value: unknown[]): AlertRule[] =>
  alertRules(loadConfig({ env: {}, value: { alerts: { rules: value } } }).alerts)

const task = (health: HealthState, more: Partial<TaskReading> = {}): TaskReading => ({
  serviceCode: 'A',
  taskId: 't1',
  health,
  healthSince: null,
  viewers: 10,
  inputBitrate: 1_000_000,
  ...more,
})

/** Runs passes, keeping tracks and the incidents opened as a database would. */
function run(ruleSet: AlertRule[]) {
  let tracks: Tracks = new Map()
  let open: OpenIncident[] = []
  let nextId = 1
  const log: string[] = []
  return {
    log,
    get open() {
      return open
    },
    pass(now: number, readings: Readings) {
      const decided = evaluateRules(ruleSet, readings, open, tracks, now)
      tracks = decided.tracks
      for (const opening of decided.opens) {
        open = [
          ...open,
          { id: nextId, rule: opening.rule.name, serviceCode: opening.serviceCode, taskId: opening.taskId },
        ]
        log.push(`${now} open ${nextId++} ${opening.summary}`)
      }
      for (const resolving of decided.resolves) {
        open = open.filter((incident) => incident.id !== resolving.id)
        log.push(`${now} resolve ${resolving.id} ${resolving.reason}`)
      }
      return decided
    },
  }
}

const tasksOnly = (...tasks: TaskReading[]): Readings => ({ tasks, services: [] })

describe('evaluateRules', () => {
  const starving = rules([
    { name: 'starving', when: 'task.health', is: ['STARVING', 'RECONNECTING'], for: '20s', clearFor: '10s' },
  ])

  it('opens nothing for a condition shorter than `for`', () => {
    const r = run(starving)
    for (let t = 0; t < 19_000; t += 1000) r.pass(t, tasksOnly(task('STARVING')))
    r.pass(19_500, tasksOnly(task('HEALTHY')))
    r.pass(60_000, tasksOnly(task('HEALTHY')))
    expect(r.log).toEqual([])
  })

  it('opens once the condition held for `for`, with when it began, and resolves after `clearFor` false', () => {
    const r = run(starving)
    for (let t = 0; t <= 20_000; t += 1000) r.pass(t, tasksOnly(task('STARVING')))
    expect(r.log).toEqual(['20000 open 1 task A/t1: health STARVING for 20 s'])
    r.pass(21_000, tasksOnly(task('HEALTHY')))
    r.pass(30_000, tasksOnly(task('HEALTHY')))
    expect(r.log).toHaveLength(1)
    r.pass(31_000, tasksOnly(task('HEALTHY')))
    expect(r.log).toEqual(['20000 open 1 task A/t1: health STARVING for 20 s', '31000 resolve 1 cleared'])
  })

  it('keeps quiet through a reconnect that resumes within `for`', () => {
    const r = run(starving)
    r.pass(0, tasksOnly(task('HEALTHY')))
    for (let t = 1000; t < 15_000; t += 1000) r.pass(t, tasksOnly(task('RECONNECTING', { healthSince: 1000 })))
    for (let t = 15_000; t < 100_000; t += 1000) r.pass(t, tasksOnly(task('HEALTHY')))
    expect(r.log).toEqual([])
  })

  it('counts a condition from when the reading says it began', () => {
    const r = run(starving)
    const decided = r.pass(50_000, tasksOnly(task('STARVING', { healthSince: 25_000 })))
    expect(decided.opens[0]).toMatchObject({ startedAt: 25_000, summary: 'task A/t1: health STARVING for 25 s' })
  })

  it("resolves a task's incidents when the task ends, and says so", () => {
    const r = run(starving)
    r.pass(0, tasksOnly(task('STARVING')))
    r.pass(20_000, tasksOnly(task('STARVING')))
    r.pass(21_000, tasksOnly())
    expect(r.log).toEqual(['20000 open 1 task A/t1: health STARVING for 20 s', '21000 resolve 1 task-ended'])
  })

  it('a clearFor interrupted by the condition starts again', () => {
    const r = run(starving)
    r.pass(0, tasksOnly(task('STARVING')))
    r.pass(20_000, tasksOnly(task('STARVING')))
    r.pass(21_000, tasksOnly(task('HEALTHY')))
    r.pass(29_000, tasksOnly(task('STARVING')))
    r.pass(30_000, tasksOnly(task('HEALTHY')))
    r.pass(39_000, tasksOnly(task('HEALTHY')))
    expect(r.open).toHaveLength(1)
    r.pass(40_000, tasksOnly(task('HEALTHY')))
    expect(r.open).toHaveLength(0)
  })

  it(
    'compares thresholds, with the value and threshold on the ' +
      'incident; a missing reading neither opens nor clears',
    () => {
      const r = run(rules([{ name: 'thin', when: 'task.viewers', below: 5, for: 0 }]))
      const opened = r.pass(0, tasksOnly(task('HEALTHY', { viewers: 3 })))
      expect(opened.opens[0]).toMatchObject({ value: 3, threshold: 5, summary: 'task A/t1: viewers 3 below 5 for 0 s' })
      r.pass(1000, tasksOnly(task('HEALTHY', { viewers: null })))
      expect(r.open).toHaveLength(1)
      r.pass(2000, tasksOnly(task('HEALTHY', { viewers: 5 })))
      expect(r.open).toHaveLength(0)
    },
  )

  it('reads service codes: viewers, a stale list, callbacks missing; only in the rule’s codes', () => {
    const r = run(
      rules([
        { name: 'drop', when: 'service.viewers', below: 100, serviceCodes: ['A'] },
        { name: 'stale', when: 'upstream.stale', for: '1m', severity: 'CRITICAL' },
        { name: 'forgetful', when: 'service.callbacksMissing', above: 3 },
      ]),
    )
    const services = [
      { serviceCode: 'A', viewers: 50, stale: true, staleSince: 0, callbacksMissing: 4 },
      { serviceCode: 'B', viewers: 50, stale: false, staleSince: null, callbacksMissing: 0 },
    ]
    const decided = r.pass(60_000, { tasks: [], services })
    expect(decided.opens.map((o) => [o.rule.name, o.serviceCode, o.taskId, o.summary])).toEqual([
      ['drop', 'A', null, 'A: viewers of its live tasks 50 below 100 for 0 s'],
      ['stale', 'A', null, 'A: task list stale for 60 s'],
      ['forgetful', 'A', null, 'A: 4 tasks in the last hour whose start or end the cloud never sent (above 3)'],
    ])
  })

  it('keeps a track only for a subject that holds or whose incident is open', () => {
    const r = run(rules([{ name: 'thin', when: 'task.viewers', below: 5, for: '10s' }]))
    const kept = (decided: { tracks: Tracks }) =>
      [...decided.tracks.values()].flatMap((bySubject) => [...bySubject.keys()])
    const both = (t1: number) =>
      tasksOnly(task('HEALTHY', { viewers: t1 }), task('HEALTHY', { taskId: 't2', viewers: 50 }))
    expect(kept(r.pass(0, both(3)))).toEqual(['["A","t1"]'])
    expect(r.pass(10_000, both(3)).opens.map((o) => o.taskId)).toEqual(['t1'])
    // Fine again: its track counts `clearFor` while the incident is open, then goes.
    expect(kept(r.pass(11_000, both(50)))).toEqual(['["A","t1"]'])
    expect(r.pass(21_000, both(50)).resolves.map((o) => o.reason)).toEqual(['cleared'])
    expect(kept(r.pass(22_000, both(50)))).toEqual([])
  })

  it('resolves the open incidents of a rule no longer configured', () => {
    const decided = evaluateRules(
      starving,
      tasksOnly(),
      [{ id: 7, rule: 'gone', serviceCode: 'A', taskId: null }],
      new Map(),
      0,
    )
    expect(decided.resolves).toEqual([
      { id: 7, reason: 'rule-removed', summary: 'rule "gone" is no longer configured' },
    ])
  })

  it('resolves the open incidents of a code the rule no longer watches (its serviceCodes narrowed)', () => {
    const narrowed = rules([{ name: 'thin', when: 'task.viewers', below: 5, for: '1s', serviceCodes: ['A'] }])
    const open = [
      { id: 8, rule: 'thin', serviceCode: 'B', taskId: 't9' },
      { id: 9, rule: 'thin', serviceCode: 'A', taskId: 't1' },
    ]
    const readings = tasksOnly(task('HEALTHY', { viewers: 1 }), task('HEALTHY', { serviceCode: 'B', taskId: 't9' }))
    expect(evaluateRules(narrowed, readings, open, new Map(), 0).resolves).toEqual([
      { id: 8, reason: 'rule-removed', summary: 'rule "thin" no longer watches B' },
    ])
  })

  it('an open incident found after a restart stays open while its condition holds', () => {
    const open = [{ id: 3, rule: 'starving', serviceCode: 'A', taskId: 't1' }]
    const decided = evaluateRules(starving, tasksOnly(task('STARVING')), open, new Map(), 0)
    expect(decided.opens).toEqual([])
    expect(decided.resolves).toEqual([])
  })
})
