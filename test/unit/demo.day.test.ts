import { describe, expect, it } from 'vitest'
import { countersAt, DEMO_DAY, viewersAt } from '../../src/simulator/scenario.model.js'
import { roundSeed } from '../../src/model/seeded.random.js'
import { archiveFate } from '../../src/simulator/archive.plan.js'
import { generateScenario } from '../../src/simulator/session.scenario.js'

// `livegate demo`'s day profile: what a person watching the dashboard for two minutes, or for a
// round, is meant to see. The tests' own scenarios (no `day`) are covered by session.scenario.test.
const MINUTE = 60_000
const options = { seed: roundSeed(1, 0), sessions: 24, serviceCodes: ['DEMO'], rate: 4, epochMs: 0, audience: true }
const day = generateScenario({ ...options, day: DEMO_DAY })
const live = (atMs: number) =>
  day.sessions.filter((session) => session.liveFromMs <= atMs && atMs < session.listedUntilMs)

describe("the demo's day", () => {
  it('keeps the seed: the same tasks and callbacks as the packed scenario, only spread in time', () => {
    const packed = generateScenario(options)
    expect(day.sessions.map((session) => session.taskId)).toEqual(packed.sessions.map((session) => session.taskId))
    expect(day.callbacks.length).toBe(packed.callbacks.length)
    expect(packed.durationMs).toBeLessThan(MINUTE)
  })

  it('has tasks that live minutes, the first three for the whole round', () => {
    expect(day.durationMs).toBeGreaterThan(8 * MINUTE)
    const [first, second, third, ...others] = day.sessions
    for (const marathon of [first, second, third]) {
      expect(marathon?.liveFromMs).toBeLessThan(20_000)
      expect(marathon?.listedUntilMs).toBeGreaterThan(day.durationMs - MINUTE)
    }
    const lives = others.map((session) => session.listedUntilMs - session.liveFromMs)
    expect(Math.min(...lives)).toBeGreaterThan(30_000)
    expect(Math.max(...lives)).toBeGreaterThan(2 * MINUTE)
  })

  it('has something live and watched from the first minute on, with an audience that ramps and falls', () => {
    for (let atMs = 30_000; atMs < day.durationMs - MINUTE; atMs += 15_000)
      expect(live(atMs).length, `at ${atMs} ms`).toBeGreaterThan(2)
    const audience = Array.from({ length: Math.floor(day.durationMs / 15_000) }, (_, i) =>
      live(i * 15_000).reduce((sum, session) => sum + viewersAt(session, i * 15_000), 0),
    )
    const peak = Math.max(...audience)
    expect(peak).toBeGreaterThan(1000)
    expect(audience.slice(audience.indexOf(peak)).some((viewers) => viewers < peak / 2)).toBe(true)
    expect(audience.slice(0, 8).some((viewers) => viewers > 0)).toBe(true)
  })

  it('announces a recording in the first minute (type 2, of a file the archive keeps even with mishaps)', () => {
    const first = day.callbacks.find(
      (callback) => callback.type === 2 && archiveFate(callback.taskId, true) === 'ANNOUNCED',
    )
    expect(first?.atMs).toBeLessThan(MINUTE)
  })

  it('has a stall, a reconnect and a forgotten start callback in a round', () => {
    expect(day.sessions.some((session) => session.audience?.stall)).toBe(true)
    expect(day.sessions.some((session) => session.audience?.forgetsStart)).toBe(true)
    const reconnects = day.callbacks.filter((callback) => callback.type === 15 && callback.fields.status === '1')
    expect(reconnects.length).toBeGreaterThan(0)
  })

  it('sways each input bitrate, never backwards, and holds it still while stalled', () => {
    const rates = (session: (typeof day.sessions)[number]) => {
      const points: number[] = []
      for (let atMs = session.liveFromMs; atMs + 10_000 <= session.listedUntilMs; atMs += 10_000) {
        points.push(
          countersAt(session, undefined, atMs + 10_000).inputBytes - countersAt(session, undefined, atMs).inputBytes,
        )
      }
      return points
    }
    const marathon = rates(day.sessions[0] as (typeof day.sessions)[number])
    expect(Math.min(...marathon)).toBeGreaterThanOrEqual(0)
    expect(Math.max(...marathon) / Math.min(...marathon)).toBeGreaterThan(1.3)
    const stalled = day.sessions.find((session) => session.audience?.stall && session.audience.resetAtMs === null)
    expect(rates(stalled as (typeof day.sessions)[number])).toContain(0)
  })
})
