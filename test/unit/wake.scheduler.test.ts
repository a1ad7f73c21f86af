import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { type RunVerdict, WakeScheduler } from '../../src/work/wake.scheduler.js'

// The one wake-and-run-again loop, on fake timers: when it runs, how often, and when it stops.

beforeEach(() => {
  vi.useFakeTimers()
})
afterEach(() => {
  vi.useRealTimers()
})

/** A scheduler whose runs are counted and answer what `verdicts` says, one after another. */
function counted(verdicts: Array<RunVerdict | undefined> = [], onError?: (error: unknown) => number | undefined) {
  const state = { runs: 0, release: [] as Array<() => void>, hold: false }
  const scheduler = new WakeScheduler({
    run: async () => {
      state.runs++
      if (state.hold) await new Promise<void>((resolve) => state.release.push(resolve))
      const verdict = verdicts.shift()
      if (verdict && 'within' in verdict && verdict.within === -1) throw new Error('the database is away')
      return verdict
    },
    onError,
  })
  return { scheduler, state }
}

describe('WakeScheduler', () => {
  it('runs at a wake, and once more after a run under way for every wake that came during it', async () => {
    const { scheduler, state } = counted()
    state.hold = true
    scheduler.wake()
    scheduler.wake()
    scheduler.wake()
    expect(state.runs).toBe(1)
    state.hold = false
    state.release.shift()?.()
    await scheduler.settled()
    expect(state.runs).toBe(2)
  })

  it('runs again at once while a run says so, and rests when it says so', async () => {
    const { scheduler, state } = counted([{ again: true }, { again: true }, {}])
    scheduler.wake()
    await scheduler.settled()
    expect(state.runs).toBe(3)

    const resting = counted([{ rest: true }])
    resting.state.hold = true
    resting.scheduler.wake()
    resting.scheduler.wake()
    resting.state.release.shift()?.()
    await resting.scheduler.settled()
    expect(resting.state.runs).toBe(1)
  })

  it('looks again within the delay a run asks for, the earliest of several', async () => {
    const { scheduler, state } = counted([{ within: 1000 }, { within: 1000 }])
    scheduler.wake()
    await scheduler.settled()
    scheduler.wakeIn(25)
    scheduler.wakeIn(500)
    await vi.advanceTimersByTimeAsync(24)
    expect(state.runs).toBe(1)
    await vi.advanceTimersByTimeAsync(1)
    expect(state.runs).toBe(2)
    // That run asked for a look within a second: the tick.
    await vi.advanceTimersByTimeAsync(999)
    expect(state.runs).toBe(2)
    await vi.advanceTimersByTimeAsync(1)
    expect(state.runs).toBe(3)
  })

  it('after a throw, looks again when onError says, and keeps no timer of a process that stopped', async () => {
    const errors: unknown[] = []
    const { scheduler, state } = counted([{ within: -1 }], (error) => {
      errors.push(error)
      return 1000
    })
    scheduler.wake()
    await scheduler.settled()
    expect(errors).toEqual([new Error('the database is away')])
    await vi.advanceTimersByTimeAsync(1000)
    expect(state.runs).toBe(2)
    scheduler.wakeIn(10)
    await scheduler.stop()
    scheduler.wake()
    await vi.advanceTimersByTimeAsync(10_000)
    expect(state.runs).toBe(2)
    expect(vi.getTimerCount()).toBe(0)
    scheduler.restart()
    scheduler.wake()
    await scheduler.settled()
    expect(state.runs).toBe(3)
  })

  it('waits for the run under way when stopped', async () => {
    const { scheduler, state } = counted()
    state.hold = true
    scheduler.wake()
    let stopped = false
    const stopping = scheduler.stop().then(() => (stopped = true))
    await vi.advanceTimersByTimeAsync(0)
    expect(stopped).toBe(false)
    state.release.shift()?.()
    await stopping
    expect(state.runs).toBe(1)
  })
})
