import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { type PassOutcome, PassScheduler } from '../../src/work/pass.scheduler.js'

// When a reader of the log runs its passes, on fake timers. Built without a channel listener, as
// a reader that only catches up is: passes then run at its start, at the tick, and when woken.

beforeEach(() => {
  vi.useFakeTimers()
})
afterEach(() => {
  vi.useRealTimers()
})

const done = (more = false, pending = false): PassOutcome => ({ kind: 'done', more, pending })

/** A scheduler whose passes answer `outcomes` one after another (then an idle pass), counted. */
function scheduled(outcomes: Array<PassOutcome | Error>, tickMs = 1000) {
  const state = { passes: 0, errors: [] as unknown[] }
  const scheduler = new PassScheduler({
    tickMs,
    pass: async () => {
      state.passes++
      const outcome = outcomes.shift() ?? done()
      if (outcome instanceof Error) throw outcome
      return outcome
    },
    onError: (error) => void state.errors.push(error),
  })
  return { scheduler, state }
}

describe('PassScheduler', () => {
  it('runs a first pass at start, again at once while a batch was full, then at each tick', async () => {
    const { scheduler, state } = scheduled([done(true), done(true), done()])
    await scheduler.start()
    await vi.advanceTimersByTimeAsync(0)
    expect(state.passes).toBe(3)
    await vi.advanceTimersByTimeAsync(999)
    expect(state.passes).toBe(3)
    await vi.advanceTimersByTimeAsync(1)
    expect(state.passes).toBe(4)
    await scheduler.stop()
  })

  it('looks again soon, not at the tick, when committed rows wait behind an older transaction', async () => {
    const { scheduler, state } = scheduled([done(false, true), done()])
    await scheduler.start()
    await vi.advanceTimersByTimeAsync(0)
    expect(state.passes).toBe(1)
    await vi.advanceTimersByTimeAsync(25)
    expect(state.passes).toBe(2)
    await scheduler.stop()
  })

  it('stands by while another instance holds the lock: the next look is at the tick', async () => {
    const { scheduler, state } = scheduled([{ kind: 'busy' }])
    await scheduler.start()
    await vi.advanceTimersByTimeAsync(0)
    expect(state.passes).toBe(1)
    await vi.advanceTimersByTimeAsync(999)
    expect(state.passes).toBe(1)
    await vi.advanceTimersByTimeAsync(1)
    expect(state.passes).toBe(2)
    await scheduler.stop()
  })

  it('tells of a failed pass and tries again a second later; nothing runs after stop', async () => {
    const failure = new Error('the database is away')
    const { scheduler, state } = scheduled([failure], 60_000)
    await scheduler.start()
    await vi.advanceTimersByTimeAsync(0)
    expect(state.errors).toEqual([failure])
    await vi.advanceTimersByTimeAsync(1000)
    expect(state.passes).toBe(2)
    await scheduler.stop()
    scheduler.wake()
    await vi.advanceTimersByTimeAsync(120_000)
    expect(state.passes).toBe(2)
  })
})
