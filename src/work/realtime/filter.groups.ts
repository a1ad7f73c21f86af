import { SubscriptionQueue } from './subscription.queue.js'

// Subscribers served per turn of the event loop in a hand-out given a pause: about 2 ms of writes, so a
// callback's round trips to the database (a few each) wait that long behind a hand-out, not a fifth of a second.
export const PART = 100

interface Group<F, T> {
  filter: F
  members: Set<Member<F, T>>
}

interface Member<F, T> {
  readonly queue: SubscriptionQueue<T>
  readonly group: Group<F, T>
  /** The number of the last rows handed out before this member joined, or handed to it since. */
  seen: number
}

/** Rows a hand-out in parts still owes to some: the items of each group that wanted any. */
interface Owed<F, T> {
  number: number
  items: Map<Group<F, T>, readonly T[]>
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
  // Rows handed out are numbered; a member's `seen` says which it has.
  private handed = 0
  // While a hand-out in parts runs: the rows it still owes, oldest first; it settles `running`.
  private owed: Array<Owed<F, T>> = []
  private running: Promise<void> | undefined

  /** `subscriberBuffer`: how many undelivered items one subscriber may have before it is cut off. */
  constructor(private readonly subscriberBuffer: number) {}

  /** Whether no subscription is open. */
  get empty(): boolean {
    return this.groups.size === 0
  }

  /** How many subscriptions are open. */
  get size(): number {
    let n = 0
    for (const group of this.groups.values()) n += group.members.size
    return n
  }

  /** A queue of the items from now on that match `filter`; it leaves its group when it closes. */
  join(filter: F): SubscriptionQueue<T> {
    const key = JSON.stringify(filter, Object.keys(filter).sort())
    let group = this.groups.get(key)
    if (!group) {
      group = { filter, members: new Set() }
      this.groups.set(key, group)
    }
    const joined = group
    const queue: SubscriptionQueue<T> = new SubscriptionQueue<T>(this.subscriberBuffer, () => {
      joined.members.delete(member)
      if (joined.members.size === 0) this.groups.delete(key)
    })
    const member: Member<F, T> = { queue, group: joined, seen: this.handed }
    joined.members.add(member)
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
   * served (these rows and any that joined them). Ten thousand sockets take a core for a fifth of a
   * second; in between, the process reads the next callbacks and the database's answers. Rows handed
   * out meanwhile join the hand-out under way rather than wait for it to end: the subscribers it has
   * not reached yet get the earlier rows and these in one batch (one write), and it then goes round
   * again for those it had passed. A process that falls behind so writes less per message, and an
   * event waits for at most one round. Those served are the subscribers when the rows were handed
   * out: one who joins later starts after them.
   */
  handOut<R>(
    rows: readonly R[],
    matches: (filter: F, row: R) => boolean,
    make: (row: R) => T,
    pause?: () => Promise<void>,
  ): Promise<void> | undefined {
    const made: Array<{ value: T } | undefined> = []
    const items = new Map<Group<F, T>, readonly T[]>()
    let subscribers = 0
    for (const group of this.groups.values()) {
      const wanted: T[] = []
      for (let i = 0; i < rows.length; i++) {
        const row = rows[i] as R
        if (matches(group.filter, row)) wanted.push((made[i] ??= { value: make(row) }).value)
      }
      if (wanted.length === 0) continue
      items.set(group, wanted)
      subscribers += group.members.size
    }
    if (items.size === 0) return undefined
    const number = ++this.handed
    if (this.running) {
      this.owed.push({ number, items })
      return this.running
    }
    if (!pause || subscribers <= PART) {
      for (const [group, wanted] of items)
        for (const member of group.members) {
          member.seen = number
          give(member.queue, wanted)
        }
      return undefined
    }
    this.owed.push({ number, items })
    this.running = this.goRound(pause)
    return this.running
  }

  /** Ends every subscription. */
  close(): void {
    this.owed = []
    for (const group of [...this.groups.values()]) for (const member of [...group.members]) member.queue.close()
  }

  // Rounds of every member, each given what it is owed, until nothing is.
  private async goRound(pause: () => Promise<void>): Promise<void> {
    try {
      while (this.owed.length > 0) {
        const through = this.handed
        await this.round(pause)
        // Every member of that round has the rows up to `through`; one who joined since starts after them.
        this.owed = this.owed.filter((rows) => rows.number > through)
      }
    } catch (error) {
      this.owed = []
      throw error
    } finally {
      this.running = undefined
    }
  }

  // One round: the members at its start, in parts; rows handed out during it reach those not yet served.
  private async round(pause: () => Promise<void>): Promise<void> {
    const members: Array<Member<F, T>> = []
    for (const group of this.groups.values()) for (const member of group.members) members.push(member)
    let served = 0
    let cached: { group: Group<F, T>; seen: number; handed: number; items: readonly T[] } | undefined
    for (const member of members) {
      if (member.seen >= this.handed) continue
      if (cached?.group !== member.group || cached.seen !== member.seen || cached.handed !== this.handed)
        cached = { group: member.group, seen: member.seen, handed: this.handed, items: this.owedTo(member) }
      member.seen = this.handed
      if (cached.items.length > 0) give(member.queue, cached.items)
      if (++served % PART === 0) await pause()
    }
  }

  private owedTo(member: Member<F, T>): readonly T[] {
    const items: T[] = []
    for (const rows of this.owed) {
      if (rows.number <= member.seen) continue
      const wanted = rows.items.get(member.group)
      if (wanted) for (const item of wanted) items.push(item)
    }
    return items
  }
}

function give<T>(queue: SubscriptionQueue<T>, items: readonly T[]): void {
  if (items.length === 1) queue.push(items[0] as T)
  else queue.pushAll(items)
}
