import { describe, expect, it } from 'vitest'
import { faultsOf, listFaultAt } from '../../src/simulator/fault.plan.js'
import { countersAt, THIN_SHARE } from '../../src/simulator/scenario.model.js'
import { generateScenario } from '../../src/simulator/session.scenario.js'
import { taskListAt } from '../../src/simulator/task-list.snapshot.js'

// The faults the simulator plays, each with its ground truth: what the alert rules should find.
const options = {
  seed: 7,
  sessions: 40,
  serviceCodes: ['A', 'B'],
  rate: 4,
  epochMs: 0,
  audience: true,
  serviceFaults: 2,
}
const scenario = generateScenario(options)
const faults = faultsOf(scenario)
const of = (kind: string) => faults.filter((fault) => fault.kind === kind)
const sessionOf = (taskId: string | null) => scenario.sessions.find((session) => session.taskId === taskId)
const viewersOf = (code: string, atMs: number) =>
  taskListAt(scenario, code, atMs).task_list.reduce(
    (sum, task) => sum + task.outputs.reduce((n, o) => n + o.http_connections_num, 0),
    0,
  )

describe('the simulator’s faults and their ground truth', () => {
  it('plays every kind, in time order, and is the seed’s alone', () => {
    expect(new Set(faults.map((fault) => fault.kind))).toEqual(
      new Set(['stall', 'starving-input', 'forgotten-start', 'audience-drop', 'stale-list', 'reconnect']),
    )
    expect(faults.map((fault) => fault.fromMs)).toEqual([...faults.map((fault) => fault.fromMs)].sort((a, b) => a - b))
    expect(faultsOf(generateScenario(options))).toEqual(faults)
    // The faults draw nothing from the seed's stream: the same tasks with or without them.
    const plain = generateScenario({ ...options, serviceFaults: 0 })
    expect(plain.sessions.map((session) => session.taskId)).toEqual(scenario.sessions.map((session) => session.taskId))
    expect(plain.serviceFaults).toBeUndefined()
  })

  it('a stall: the input bytes stop growing over its window', () => {
    const [stall] = of('stall')
    const session = sessionOf(stall?.taskId ?? null)
    if (!stall || !session || stall.untilMs === null) throw new Error('no stall')
    const bytes = (atMs: number) => countersAt(session, undefined, atMs).inputBytes
    expect(bytes(stall.untilMs)).toBe(bytes(stall.fromMs))
    expect(bytes(stall.fromMs)).toBeGreaterThan(bytes(session.liveFromMs))
  })

  it('a starving input: its bytes still grow, at a trickle of its rate', () => {
    const [thin] = of('starving-input')
    const session = sessionOf(thin?.taskId ?? null)
    if (!thin || !session || thin.untilMs === null) throw new Error('no starving input')
    const bytes = (atMs: number) => countersAt(session, undefined, atMs).inputBytes
    const rate = (bytes(thin.untilMs) - bytes(thin.fromMs)) / ((thin.untilMs - thin.fromMs) / 1000)
    expect(rate).toBeGreaterThan(0)
    expect(rate / session.inputBytesPerSecond).toBeCloseTo(THIN_SHARE, 2)
  })

  it('a forgotten start: the cloud sends no type 0 for the task, listed from its fault’s start', () => {
    for (const forgotten of of('forgotten-start')) {
      expect(scenario.callbacks.filter((c) => c.taskId === forgotten.taskId && c.type === 0)).toEqual([])
      expect(sessionOf(forgotten.taskId)?.listedFromMs).toBe(forgotten.fromMs)
    }
  })

  it('an audience drop: every task of the code is watched by nobody over its window, and only then', () => {
    const drops = of('audience-drop')
    expect(drops.map((drop) => drop.serviceCode).sort()).toEqual(['A', 'A', 'B', 'B'])
    for (const drop of drops) {
      const until = drop.untilMs as number
      for (let at = drop.fromMs; at < until; at += (until - drop.fromMs) / 5)
        expect(viewersOf(drop.serviceCode, at)).toBe(0)
    }
    // Outside the drops, the codes' audiences are there.
    const watched = Array.from({ length: 50 }, (_, i) => (i * scenario.durationMs) / 50)
      .filter((at) => !drops.some((drop) => drop.fromMs <= at && at < (drop.untilMs as number)))
      .map((at) => viewersOf('A', at))
    expect(watched.some((viewers) => viewers > 0)).toBe(true)
  })

  it('a stale list: the code’s task list fails by errors or hangs to its window’s end; the other code answers', () => {
    const stale = of('stale-list')
    expect(stale).toHaveLength(4)
    const answers = stale.map((fault) => listFaultAt(scenario, fault.serviceCode, fault.fromMs + 10))
    expect(answers).toContainEqual({ status: 503 })
    const hang = stale.find((_, i) => answers[i]?.delayMs !== undefined)
    expect(listFaultAt(scenario, hang?.serviceCode as string, (hang?.fromMs as number) + 10)).toEqual({
      delayMs: (hang?.untilMs as number) - (hang?.fromMs as number) - 10,
    })
    for (const fault of stale) {
      expect(listFaultAt(scenario, fault.serviceCode, fault.fromMs - 1)).toBeUndefined()
      expect(listFaultAt(scenario, fault.serviceCode, fault.untilMs as number)).toBeUndefined()
      // The other code answers unless a window of its own is open.
      const other = fault.serviceCode === 'A' ? 'B' : 'A'
      const own = stale.some(
        (f) => f.serviceCode === other && f.fromMs <= fault.fromMs && fault.fromMs < (f.untilMs as number),
      )
      expect(listFaultAt(scenario, other, fault.fromMs) !== undefined).toBe(own)
    }
  })

  it('a reconnect: a type 15 status 0 resumed by its status 1, both of the same task', () => {
    const reconnects = of('reconnect')
    expect(reconnects.length).toBeGreaterThan(0)
    for (const reconnect of reconnects) {
      const mine = scenario.callbacks.filter((c) => c.taskId === reconnect.taskId && c.type === 15)
      expect(mine.find((c) => c.fields.status === '0')?.atMs).toBe(reconnect.fromMs)
      expect(mine.find((c) => c.fields.status === '1')?.atMs).toBe(reconnect.untilMs)
      expect(reconnect.untilMs as number).toBeGreaterThan(reconnect.fromMs)
    }
  })
})
