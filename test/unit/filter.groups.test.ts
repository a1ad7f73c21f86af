import { describe, expect, it } from 'vitest'
import { FilterGroups, PART } from '../../src/work/realtime/filter.groups.js'
import { SubscriberTooSlow } from '../../src/work/realtime/subscription.queue.js'

// The one filter-group mechanism of the hubs: matched once per distinct filter, handed to all.

interface Filter {
  code?: string
  live?: boolean
}

/** A pause let go of by hand: `release` ends the one waited on; `count` says how many were asked for. */
const heldPause = () => {
  const held = { count: 0, release: () => {} }
  const pause = () => {
    held.count++
    return new Promise<void>((resolve) => {
      held.release = resolve
    })
  }
  return Object.assign(held, { pause })
}

/** Lets every pause go, a turn apart, until `done` settles. */
const drain = async (done: Promise<void> | undefined, release: () => void): Promise<void> => {
  let ended = false
  void done?.then(() => {
    ended = true
  })
  while (!ended) {
    release()
    await new Promise((resolve) => setImmediate(resolve))
  }
}

/** Every row to every subscriber, as it is. */
const handAll = (groups: FilterGroups<Filter, number>, rows: number[], pause?: () => Promise<void>) =>
  groups.handOut(
    rows,
    () => true,
    (row) => row,
    pause,
  )

const taken = async <T>(queue: AsyncIterator<T>, n: number): Promise<T[]> => {
  const items: T[] = []
  for (let i = 0; i < n; i++) items.push((await queue.next()).value as T)
  return items
}

describe('filter groups', () => {
  it('groups subscribers by filter, whatever the order of its keys, and matches once per group', async () => {
    const groups = new FilterGroups<Filter, { n: number }>(10)
    const a = groups.join({ code: 'A', live: true })
    const b = groups.join({ live: true, code: 'A' })
    const c = groups.join({ code: 'B' })
    expect(groups.size).toBe(3)
    const asked: Filter[] = []
    let made = 0
    groups.handOut(
      ['one'],
      (filter) => {
        asked.push(filter)
        return filter.live === true || filter.code === 'B'
      },
      () => ({ n: ++made }),
    )
    // Two distinct filters, two questions; one item made for both, the same object for every subscriber.
    expect(asked).toHaveLength(2)
    expect(made).toBe(1)
    const [[fromA], [fromB], [fromC]] = await Promise.all([taken(a, 1), taken(b, 1), taken(c, 1)])
    expect(fromA).toEqual({ n: 1 })
    expect(fromB).toBe(fromA)
    expect(fromC).toBe(fromA)
  })

  it('makes nothing when no group wants the item', () => {
    const groups = new FilterGroups<Filter, number>(10)
    groups.join({ code: 'A' })
    let made = 0
    groups.handOut(
      ['one'],
      (filter) => filter.code === 'B',
      () => ++made,
    )
    expect(made).toBe(0)
  })

  it('drops a group when its last subscriber leaves, and ends every subscription on close', async () => {
    const groups = new FilterGroups<Filter, number>(10)
    const first = groups.join({ code: 'A' })
    const second = groups.join({ code: 'B' })
    expect(groups.empty).toBe(false)
    await first.return()
    expect(groups.size).toBe(1)
    let asked = 0
    groups.handOut(
      ['one'],
      () => ++asked > 0,
      () => 1,
    )
    expect(asked).toBe(1)
    expect(await taken(second, 1)).toEqual([1])
    groups.close()
    expect(await second.next()).toEqual({ value: undefined, done: true })
    expect(groups.empty).toBe(true)
  })

  it('cuts off a subscriber that lets more than its buffer wait, and tells it once', async () => {
    const groups = new FilterGroups<Filter, number>(2)
    const queue = groups.join({})
    for (let i = 0; i < 5; i++) handAll(groups, [i])
    expect(groups.empty).toBe(true)
    await expect(queue.next()).rejects.toBeInstanceOf(SubscriberTooSlow)
  })

  it('hands a direct reader the rows its filter matches as one batch, in order, then flushes it once', () => {
    const groups = new FilterGroups<Filter, number>(10)
    const heard: string[] = []
    const reader = (name: string) => {
      const take = (item: number, batched: boolean) => void heard.push(`${name} ${item}${batched ? ' batched' : ''}`)
      return Object.assign(take, { flush: () => void heard.push(`${name} flush`) })
    }
    groups.join({ code: 'A' }).direct(reader('a'), () => {})
    groups.join({ code: 'B' }).direct(reader('b'), () => {})
    let made = 0
    groups.handOut(
      [1, 2, 3],
      (filter, row) => filter.code === 'A' || row === 2,
      (row) => (made++, row * 10),
    )
    // One subscriber matched three rows, the other one: a batch and its flush, then a single item.
    expect(heard).toEqual(['a 10 batched', 'a 20 batched', 'a 30 batched', 'a flush', 'b 20'])
    expect(made).toBe(3)
  })
  it('hands out to many in parts, a pause between each, to those who were subscribed when it began', async () => {
    const groups = new FilterGroups<Filter, number>(10)
    const got: number[] = []
    const subscribe = (n: number) =>
      groups.join({ code: 'A' }).direct(
        (item) => void got.push(n * 100 + item),
        () => {},
      )
    for (let n = 0; n < 2.5 * PART; n++) subscribe(n)
    const held = heldPause()
    const done = handAll(groups, [1], held.pause)
    expect(done).toBeInstanceOf(Promise)
    // The first part is served at once; then it waits for the pause.
    expect(got).toHaveLength(PART)
    expect(held.count).toBe(1)
    subscribe(99_999)
    held.release()
    await new Promise((resolve) => setImmediate(resolve))
    expect(got).toHaveLength(2 * PART)
    held.release()
    await done
    expect(held.count).toBe(2)
    // Every subscriber once, in order; the one who joined during a pause is not among them.
    expect(got).toEqual(Array.from({ length: 2.5 * PART }, (_, n) => n * 100 + 1))
  })

  it('takes rows handed out during a hand-out in parts along: in one batch to those not yet served', async () => {
    const groups = new FilterGroups<Filter, number>(10)
    const got: string[][] = Array.from({ length: 2.5 * PART }, () => [])
    const subscribe = (n: number) => {
      const take = (item: number, batched: boolean) => void got[n]?.push(`${item}${batched ? ' batched' : ''}`)
      groups
        .join({ code: n % 2 === 0 ? 'even' : 'odd' })
        .direct(Object.assign(take, { flush: () => void got[n]?.push('flush') }), () => {})
    }
    for (let n = 0; n < 2.5 * PART; n++) subscribe(n)
    const pauses: Array<() => void> = []
    const pause = () => new Promise<void>((resolve) => void pauses.push(resolve))
    const first = handAll(groups, [1], pause)
    // Group by group: the first part was the first PART even subscribers.
    expect(got[2 * PART - 2]).toEqual(['1'])
    expect(got[2 * PART]).toEqual([])
    expect(got[1]).toEqual([])
    // The second rows come while the first wait on a pause; the third want only the even subscribers.
    const second = handAll(groups, [2], pause)
    const third = groups.handOut(
      [3],
      (filter) => filter.code === 'even',
      (r) => r,
      pause,
    )
    expect(second).toBe(first)
    expect(third).toBe(first)
    while (pauses.length > 0) {
      pauses.shift()?.()
      await new Promise((resolve) => setImmediate(resolve))
    }
    await first
    // Not yet served when the later rows came: all it was owed as one batch, flushed once, in order.
    expect(got[2 * PART]).toEqual(['1 batched', '2 batched', '3 batched', 'flush'])
    expect(got[1]).toEqual(['1 batched', '2 batched', 'flush'])
    // Served before: the first rows alone, then, in a second round, the later ones together.
    expect(got[0]).toEqual(['1', '2 batched', '3 batched', 'flush'])
    const even = ['1', '2', '3']
    const odd = ['1', '2']
    expect(
      got.every(
        (items, n) =>
          items
            .filter((item) => item !== 'flush')
            .map((item) => item.split(' ')[0])
            .join() === (n % 2 === 0 ? even : odd).join(),
      ),
    ).toBe(true)
  })

  it('serves one who joins during a hand-out in parts only the rows handed out after it joined', async () => {
    const groups = new FilterGroups<Filter, number>(10)
    const got: number[] = []
    for (let n = 0; n < 1.5 * PART; n++)
      groups.join({}).direct(
        () => {},
        () => {},
      )
    const held = heldPause()
    const done = handAll(groups, [1], held.pause)
    groups.join({}).direct(
      (item) => void got.push(item),
      () => {},
    )
    handAll(groups, [2], held.pause)
    await drain(done, () => held.release())
    expect(got).toEqual([2])
    // Once that round ended, the next rows begin a round of their own, and reach it too.
    const next = handAll(groups, [3], held.pause)
    expect(next).toBeInstanceOf(Promise)
    expect(next).not.toBe(done)
    await drain(next, () => held.release())
    expect(got).toEqual([2, 3])
  })

  it('hands out to a few at once, with no pause, even when given one', () => {
    const groups = new FilterGroups<Filter, number>(10)
    const got: number[] = []
    for (let n = 0; n < 3; n++)
      groups.join({}).direct(
        (item) => void got.push(item),
        () => {},
      )
    const done = handAll(groups, [7], () => Promise.reject(new Error('no pause expected')))
    expect(done).toBeUndefined()
    expect(got).toEqual([7, 7, 7])
  })
})
