import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { LeasedPoller, type LeasedPollerOptions } from '../../src/work/leased.poller.js'

// The one lease loop of the cloud's pollers, on fake timers: when a code is polled, by whom, and
// what stop leaves behind. The leases are a table in memory that two pollers share, as two
// instances share the database's.

beforeEach(() => {
  vi.useFakeTimers()
})
afterEach(() => {
  vi.useRealTimers()
})

const LEASE_MS = 3000
const silent = { info() {}, warn() {}, error() {} }

/** A lease table two pollers can share: a code's holder, until it is released. */
function leaseTable() {
  const holders = new Map<string, string>()
  return {
    holders,
    failing: false,
    of(instance: string) {
      return {
        acquire: async (code: string) => {
          if (this.failing) throw new Error('the database is away')
          if (!holders.has(code)) holders.set(code, instance)
          return holders.get(code) === instance
        },
        release: async (code: string) => {
          if (holders.get(code) === instance) holders.delete(code)
        },
      }
    },
  }
}

/** A poller whose polls are counted per code and may be held open; each asks for `next` ms. */
function counted(table: ReturnType<typeof leaseTable>, instance: string, more: Partial<LeasedPollerOptions> = {}) {
  const state = { polls: [] as string[], held: [] as string[], open: [] as Array<() => void>, hold: false, next: 1000 }
  const poller = new LeasedPoller({
    name: 'list_files',
    serviceCodes: ['A', 'B'],
    leaseMs: LEASE_MS,
    ...table.of(instance),
    poll: async (code) => {
      state.polls.push(code)
      if (state.hold) await new Promise<void>((resolve) => state.open.push(resolve))
      return state.next
    },
    onHeld: (code, held) => state.held.push(`${code}:${held ? 'taken' : 'given up'}`),
    log: silent,
    ...more,
  })
  return { poller, state }
}

describe('LeasedPoller', () => {
  it('polls each code once its lease is held, then after the wait each poll asks for', async () => {
    const table = leaseTable()
    const { poller, state } = counted(table, 'one')
    poller.start()
    await vi.advanceTimersByTimeAsync(0)
    expect(state.polls).toEqual(['A', 'B'])
    expect(state.held).toEqual(['A:taken', 'B:taken'])
    expect(poller.holds('A') && poller.covers('B') && !poller.covers('C')).toBe(true)
    await vi.advanceTimersByTimeAsync(999)
    expect(state.polls).toHaveLength(2)
    await vi.advanceTimersByTimeAsync(1)
    expect(state.polls).toEqual(['A', 'B', 'A', 'B'])
    await poller.stop()
  })

  it('leaves a code another instance holds alone, and takes it over once it is given up', async () => {
    const table = leaseTable()
    const first = counted(table, 'one')
    const second = counted(table, 'two')
    first.poller.start()
    await vi.advanceTimersByTimeAsync(0)
    second.poller.start()
    await vi.advanceTimersByTimeAsync(5000)
    expect(second.state.polls).toEqual([])
    expect(second.poller.holds('A')).toBe(false)
    await first.poller.stop()
    expect(table.holders.size).toBe(0)
    expect(first.state.held).toEqual(['A:taken', 'B:taken', 'A:given up', 'B:given up'])
    // The next renewal, at most a third of a lease later, takes both codes.
    await vi.advanceTimersByTimeAsync(LEASE_MS / 3 + 10)
    expect(second.state.polls).toEqual(['A', 'B'])
    await second.poller.stop()
  })

  it('stops polling a code whose lease is lost, and a renewal that fails counts as lost', async () => {
    const table = leaseTable()
    const { poller, state } = counted(table, 'one')
    poller.start()
    await vi.advanceTimersByTimeAsync(0)
    table.holders.set('A', 'two')
    await vi.advanceTimersByTimeAsync(LEASE_MS / 3)
    expect(state.held).toEqual(['A:taken', 'B:taken', 'A:given up'])
    table.failing = true
    await vi.advanceTimersByTimeAsync(LEASE_MS / 3)
    expect(state.held.at(-1)).toBe('B:given up')
    const polls = state.polls.length
    await vi.advanceTimersByTimeAsync(10_000)
    expect(state.polls).toHaveLength(polls)
    await poller.stop()
  })

  it('waits as resume says before the first poll of a code it takes', async () => {
    const table = leaseTable()
    const { poller, state } = counted(table, 'one', { resume: async (code) => (code === 'A' ? 2500 : 0) })
    poller.start()
    await vi.advanceTimersByTimeAsync(0)
    expect(state.polls).toEqual(['B'])
    await vi.advanceTimersByTimeAsync(2500)
    expect(state.polls).toContain('A')
    await poller.stop()
  })

  it('polls one code one poll at a time, even when its lease is lost and taken back meanwhile', async () => {
    const table = leaseTable()
    const { poller, state } = counted(table, 'one', { serviceCodes: ['A'] })
    state.hold = true
    poller.start()
    await vi.advanceTimersByTimeAsync(0)
    expect(state.polls).toEqual(['A'])
    table.holders.set('A', 'two')
    await vi.advanceTimersByTimeAsync(LEASE_MS / 3)
    table.holders.delete('A')
    await vi.advanceTimersByTimeAsync(LEASE_MS / 3)
    expect(state.held).toEqual(['A:taken', 'A:given up', 'A:taken'])
    expect(state.polls).toEqual(['A'])
    state.hold = false
    state.open.shift()?.()
    await vi.advanceTimersByTimeAsync(1000)
    expect(state.polls).toEqual(['A', 'A'])
    await poller.stop()
  })

  it('on stop, cancels what is under way, awaits it, gives the leases up and polls no more', async () => {
    const table = leaseTable()
    const { poller, state } = counted(table, 'one')
    state.hold = true
    poller.start()
    await vi.advanceTimersByTimeAsync(0)
    let stopped = false
    const stopping = poller.stop(() => {
      for (const open of state.open.splice(0)) open()
    })
    void stopping.then(() => {
      stopped = true
    })
    expect(poller.stopped).toBe(true)
    await stopping
    expect(stopped).toBe(true)
    expect(table.holders.size).toBe(0)
    await vi.advanceTimersByTimeAsync(60_000)
    expect(state.polls).toEqual(['A', 'B'])
    expect(vi.getTimerCount()).toBe(0)
  })

  it('tries a poll that throws again a lease later, and keeps polling', async () => {
    const table = leaseTable()
    let throws = true
    const { poller, state } = counted(table, 'one', {
      serviceCodes: ['A'],
      poll: async (code) => {
        state.polls.push(code)
        if (throws) throw new Error('a bug')
        return 1000
      },
    })
    poller.start()
    await vi.advanceTimersByTimeAsync(0)
    throws = false
    await vi.advanceTimersByTimeAsync(LEASE_MS - 1)
    expect(state.polls).toEqual(['A'])
    await vi.advanceTimersByTimeAsync(1)
    expect(state.polls).toEqual(['A', 'A'])
    await poller.stop()
  })
})
