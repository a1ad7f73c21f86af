/**
 * A source that can hand its items to a reader as they come (see {@link SubscriptionQueue.direct}).
 * `batched` says the item is one of several handed over in one go (the engine read a burst of
 * commits at once): the reader may hold it, and sends what it holds when told `flush`, right after
 * the batch's last item.
 */
export interface DirectSource<T> {
  direct(take: DirectTake<T>, end: (failure: Error | undefined) => void): boolean
}

/** A direct reader: each item, then, after a batch, `flush`. */
export interface DirectTake<T> {
  (item: T, batched: boolean): void
  flush?: (() => void) | undefined
}

/**
 * How a subscriber's queue ends when its reader fell too far behind: the transport that reads
 * the stream (the websocket adapter's shared stream) closes the client's socket for it (4009).
 */
export class SubscriberTooSlow extends Error {
  readonly code = 'SUBSCRIBER_TOO_SLOW'

  constructor() {
    super('The subscriber fell too far behind.')
  }
}

/**
 * A subscriber's queue: pushed by the realtime engine (`realtime.engine.ts`, through its filter
 * groups), read by the websocket transport (`adapters/websocket/shared.stream.ts`), directly or as
 * the GraphQL subscription's iterator. Bounded, because a
 * subscriber that does not read (its socket is stalled) must not grow the server's memory: past
 * `limit` waiting items the queue fails with {@link SubscriberTooSlow}.
 */
export class SubscriptionQueue<T> implements AsyncIterableIterator<T>, DirectSource<T> {
  private readonly items: T[] = []
  private waiting: { resolve: (result: IteratorResult<T>) => void; reject: (error: Error) => void } | undefined
  private closed = false
  private failure: Error | undefined
  private taker: { take: DirectTake<T>; end: (failure: Error | undefined) => void } | undefined

  constructor(
    private readonly limit: number,
    private readonly onClose: () => void,
  ) {}

  /** Adds an item for the subscriber; past the limit the queue closes instead. */
  push(item: T): void {
    if (this.closed) return
    if (this.taker) {
      this.taker.take(item, false)
      return
    }
    if (this.waiting) {
      const { resolve } = this.waiting
      this.waiting = undefined
      resolve({ value: item, done: false })
      return
    }
    if (this.items.length >= this.limit) {
      this.cutOff()
      return
    }
    this.items.push(item)
  }

  /** Adds several items in order, handed to a direct reader as one batch (see {@link DirectSource}). */
  pushAll(items: readonly T[]): void {
    const taker = this.taker
    if (!taker) {
      for (const item of items) this.push(item)
      return
    }
    for (const item of items) if (this.taker === taker) taker.take(item, true)
    taker.take.flush?.()
  }

  /**
   * Hands every later item straight to `take` as it is pushed, instead of keeping it for `next`:
   * a reader of thousands of subscribers then pays no promise per item. It switches only while
   * nothing waits in the queue and nobody waits on `next`, so order is kept; returns whether it
   * did. The reader bounds what it buffers itself, and calls {@link cutOff} past its bound.
   * `end` is told once when the queue ends, with its failure if it failed.
   */
  direct(take: DirectTake<T>, end: (failure: Error | undefined) => void): boolean {
    if (this.closed || this.waiting || this.items.length > 0) return false
    this.taker = { take, end }
    return true
  }

  /** Ends the queue as a full one does: for a reader that holds too many of its items unread. */
  cutOff(): void {
    this.fail(new SubscriberTooSlow())
  }

  /** How many items wait to be read. */
  get size(): number {
    return this.items.length
  }

  next(): Promise<IteratorResult<T>> {
    const item = this.items.shift()
    if (item !== undefined) return Promise.resolve({ value: item, done: false })
    if (this.failure) return Promise.reject(this.failure)
    if (this.closed) return Promise.resolve({ value: undefined, done: true })
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject }
    })
  }

  return(): Promise<IteratorResult<T>> {
    this.close()
    return Promise.resolve({ value: undefined, done: true })
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this
  }

  /** Ends the queue: what waits is dropped, the reader gets done, the hub forgets it. */
  close(): void {
    if (this.closed) return
    this.closed = true
    this.items.length = 0
    const waiting = this.waiting
    this.waiting = undefined
    if (waiting && this.failure) waiting.reject(this.failure)
    else waiting?.resolve({ value: undefined, done: true })
    const taker = this.taker
    this.taker = undefined
    taker?.end(this.failure)
    this.onClose()
  }

  /** Ends the queue with an error: the reader's next read throws it. */
  fail(error: Error): void {
    if (this.closed) return
    this.failure = error
    this.close()
  }
}
