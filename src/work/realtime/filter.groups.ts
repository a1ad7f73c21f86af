import { SubscriptionQueue } from './subscription.queue.js'

// Subscribers served per turn of the event loop in a hand-out given a pause (about 20 ms of writes).
const PART = 1000

interface Group<F, T> {
  filter: F
  queues: Set<SubscriptionQueue<T>>
}

/**
 * The subscriptions of one kind (notifications, tasks, samples, actions, incidents), grouped by
 * their filter: subscribers with the same filter share one group, so each item is matched once
 * per distinct filter and handed to every subscriber of the groups it matches. The cost of an
 * item grows with the number of distinct filters, not of subscribers. Filters are flat objects;
 * two with the same keys and values, in any order, are one group.
 */
export class FilterGroups<F extends object, T> {
  private readonly groups = new Map<string, Group<F, T>>()

  /** `subscriberBuffer`: how many undelivered items one subscriber may have before it is cut off. */
  constructor(private readonly subscriberBuffer: number) {}

  /** Whether no subscription is open. */
  get empty(): boolean {
    return this.groups.size === 0
  }

  /** How many subscriptions are open. */
  get size(): number {
    let n = 0
    for (const group of this.groups.values()) n += group.queues.size
    return n
  }

  /** A queue of the items from now on that match `filter`; it leaves its group when it closes. */
  join(filter: F): SubscriptionQueue<T> {
    const key = JSON.stringify(filter, Object.keys(filter).sort())
    let group = this.groups.get(key)
    if (!group) {
      group = { filter, queues: new Set() }
      this.groups.set(key, group)
    }
    const joined = group
    const queue: SubscriptionQueue<T> = new SubscriptionQueue<T>(this.subscriberBuffer, () => {
      joined.queues.delete(queue)
      if (joined.queues.size === 0) this.groups.delete(key)
    })
    joined.queues.add(queue)
    return queue
  }

  /**
   * Hands `rows`, in order, to the subscribers of every group: each gets the items of the rows its
   * group's filter `matches`. An item is made (`make`) once per row, at the first group that wants
   * it, and not at all when none does. A subscriber given several gets them as one batch
   * ({@link SubscriptionQueue.pushAll}), so its transport may send them together.
   *
   * Given `pause` (a wait for the event loop's next turn), a hand-out to more than {@link PART}
   * subscribers waits for it after each part, and the promise it returns settles once every one is
   * served. Ten thousand sockets take a core for a fifth of a second; in between, the process
   * reads the next callbacks and the database's answers, so the next hand-out can begin as this
   * one ends instead of after their round trips. Those it serves are the subscribers when it began.
   */
  handOut<R>(
    rows: readonly R[],
    matches: (filter: F, row: R) => boolean,
    make: (row: R) => T,
    pause?: () => Promise<void>,
  ): Promise<void> | undefined {
    const made: Array<{ value: T } | undefined> = []
    const deliveries: Array<{ queues: Iterable<SubscriptionQueue<T>>; items: T[] }> = []
    let subscribers = 0
    for (const group of this.groups.values()) {
      const items: T[] = []
      for (let i = 0; i < rows.length; i++) {
        const row = rows[i] as R
        if (matches(group.filter, row)) items.push((made[i] ??= { value: make(row) }).value)
      }
      if (items.length === 0) continue
      deliveries.push({ queues: group.queues, items })
      subscribers += group.queues.size
    }
    if (!pause || subscribers <= PART) {
      for (const { queues, items } of deliveries) for (const queue of queues) give(queue, items)
      return undefined
    }
    // Who is served is fixed now: one who joins during a pause starts after these rows.
    return inParts(
      deliveries.map(({ queues, items }) => ({ queues: [...queues], items })),
      pause,
    )
  }

  /** Ends every subscription. */
  close(): void {
    for (const group of [...this.groups.values()]) for (const queue of [...group.queues]) queue.close()
  }
}

function give<T>(queue: SubscriptionQueue<T>, items: readonly T[]): void {
  if (items.length === 1) queue.push(items[0] as T)
  else queue.pushAll(items)
}

async function inParts<T>(
  deliveries: ReadonlyArray<{ queues: ReadonlyArray<SubscriptionQueue<T>>; items: readonly T[] }>,
  pause: () => Promise<void>,
): Promise<void> {
  let served = 0
  for (const { queues, items } of deliveries)
    for (const queue of queues) {
      give(queue, items)
      if (++served % PART === 0) await pause()
    }
}
