import { SubscriptionQueue } from './subscription.queue.js'

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
   */
  handOut<R>(rows: readonly R[], matches: (filter: F, row: R) => boolean, make: (row: R) => T): void {
    const made: Array<{ value: T } | undefined> = []
    for (const group of this.groups.values()) {
      const items: T[] = []
      for (let i = 0; i < rows.length; i++) {
        const row = rows[i] as R
        if (matches(group.filter, row)) items.push((made[i] ??= { value: make(row) }).value)
      }
      if (items.length === 1) for (const queue of group.queues) queue.push(items[0] as T)
      else if (items.length > 1) for (const queue of group.queues) queue.pushAll(items)
    }
  }

  /** Ends every subscription. */
  close(): void {
    for (const group of [...this.groups.values()]) for (const queue of [...group.queues]) queue.close()
  }
}
