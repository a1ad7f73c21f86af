import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import {
  backoffMs,
  pause,
  type RunVerdict,
  retrying,
  startUnits,
  stopUnits,
  type Unit,
  WakeScheduler,
} from '../../src/work/wake.scheduler.js'

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

  it('never loses a wake that comes as a run ends, however late in that turn', async () => {
    // A wake queued this many microtasks after a run's end: one lands between the loop's decision
    // to end and the moment it is no longer counted as running.
    for (let depth = 0; depth < 8; depth++) {
      let runs = 0
      const scheduler: WakeScheduler = new WakeScheduler({
        run: () => {
          runs++
          if (runs > 1) return undefined
          const ended = Promise.resolve(undefined)
          let chain: Promise<unknown> = ended
          for (let step = 0; step < depth; step++) chain = chain.then(() => undefined)
          void chain.then(() => scheduler.wake())
          return ended
        },
      })
      scheduler.wake()
      await vi.advanceTimersByTimeAsync(0)
      await scheduler.settled()
      expect({ depth, runs }).toEqual({ depth, runs: 2 })
    }
  })

  it('backs off after failed runs by the one backoff, and starts over after a run that did not fail', async () => {
    const told: number[] = []
    let fail = 3
    let runs = 0
    const scheduler = new WakeScheduler({
      run: () => {
        runs++
        if (fail-- > 0) throw new Error('the database is away')
        return undefined
      },
      onError: (_error, failures) => void told.push(failures),
      backoff: { baseMs: 100, maxMs: 1000, random: () => 0.999_999 },
    })
    scheduler.wake()
    await vi.advanceTimersByTimeAsync(0)
    expect(scheduler.failures).toBe(1)
    // Waits of 100, 200 and 400 ms (each at the top of its jitter).
    await vi.advanceTimersByTimeAsync(99)
    expect(runs).toBe(1)
    await vi.advanceTimersByTimeAsync(1)
    expect(runs).toBe(2)
    await vi.advanceTimersByTimeAsync(199)
    expect(runs).toBe(2)
    await vi.advanceTimersByTimeAsync(1)
    expect(runs).toBe(3)
    await vi.advanceTimersByTimeAsync(400)
    expect(runs).toBe(4)
    expect(told).toEqual([1, 2, 3])
    expect(scheduler.failures).toBe(0)
    expect(vi.getTimerCount()).toBe(0)
  })

  it('drops a timer on clear, and runs once for all the wakeSoon of one turn', async () => {
    const { scheduler, state } = counted()
    scheduler.wakeIn(100)
    scheduler.clear()
    await vi.advanceTimersByTimeAsync(1000)
    expect(state.runs).toBe(0)
    scheduler.wakeSoon()
    scheduler.wakeSoon()
    expect(state.runs).toBe(0)
    await vi.advanceTimersByTimeAsync(0)
    await scheduler.settled()
    expect(state.runs).toBe(1)
  })
})

describe('backoffMs', () => {
  it('doubles from the base up to the cap, and its jitter keeps at least half of each step', () => {
    const low = () => 0
    const high = () => 0.999_999
    expect([0, 1, 2, 3, 4, 40].map((n) => backoffMs(n, 100, 1000, high))).toEqual([100, 200, 400, 800, 1000, 1000])
    expect([0, 1, 2, 3, 4, 40].map((n) => backoffMs(n, 100, 1000, low))).toEqual([50, 100, 200, 400, 500, 500])
    // A cap below the base is the base.
    expect(backoffMs(5, 100, 10, high)).toBe(100)
    for (let failures = 0; failures < 10; failures++) {
      const wait = backoffMs(failures, 100, 5000)
      expect(wait).toBeGreaterThanOrEqual(Math.min(5000, 100 * 2 ** failures) / 2)
      expect(wait).toBeLessThanOrEqual(Math.min(5000, 100 * 2 ** failures))
    }
  })
})

describe('startUnits and stopUnits', () => {
  const recorded = (names: string[], calls: string[], failing?: string): Unit[] =>
    names.map((name) => ({
      name,
      start: async () => {
        calls.push(`start ${name}`)
        if (name === failing) throw new Error(`${name} cannot start`)
      },
      stop: () => {
        calls.push(`stop ${name}`)
        if (name === failing) throw new Error(`${name} cannot stop`)
      },
    }))

  it('starts forwards and stops in reverse', async () => {
    const calls: string[] = []
    const units = recorded(['a', 'b', 'c'], calls)
    await startUnits(units)
    await stopUnits(units)
    expect(calls).toEqual(['start a', 'start b', 'start c', 'stop c', 'stop b', 'stop a'])
  })

  it('starts no unit after one that fails to start', async () => {
    const calls: string[] = []
    await expect(startUnits(recorded(['a', 'b', 'c', 'd'], calls, 'c'))).rejects.toThrow('c cannot start')
    expect(calls).toEqual(['start a', 'start b', 'start c'])
  })

  it('stops every unit even when one fails to stop, then throws its error', async () => {
    const calls: string[] = []
    await expect(stopUnits(recorded(['a', 'b', 'c'], calls, 'b'))).rejects.toThrow('b cannot stop')
    expect(calls).toEqual(['stop c', 'stop b', 'stop a'])
  })
})

describe('retrying and pause', () => {
  it('tries again after the wait asked for, until no wait is asked', async () => {
    const waits: number[] = []
    const outcome = await retrying(
      async (attempt) => attempt,
      (attempt) => (attempt < 2 ? 10 * (attempt + 1) : undefined),
      { sleep: async (ms) => void waits.push(ms) },
    )
    expect(outcome).toBe(2)
    expect(waits).toEqual([10, 20])
  })

  it('ends a pause at once when its signal aborts', async () => {
    const closing = new AbortController()
    let done = false
    const paused = pause(60_000, closing.signal).then(() => (done = true))
    await vi.advanceTimersByTimeAsync(10)
    expect(done).toBe(false)
    closing.abort()
    await paused
    expect(done).toBe(true)
    expect(vi.getTimerCount()).toBe(0)
  })
})
