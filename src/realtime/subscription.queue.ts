/**
 * A subscriber's queue: the hub pushes, the GraphQL subscription pulls. Bounded, because a
 * subscriber that does not read (its socket is stalled) must not grow the server's memory: past
 * `limit` waiting items the queue ends and `onOverflow` is told once.
 */
export class SubscriptionQueue<T> implements AsyncIterableIterator<T> {
  private readonly items: T[] = []
  private waiting: { resolve: (result: IteratorResult<T>) => void; reject: (error: Error) => void } | undefined
  private closed = false
  private failure: Error | undefined

  constructor(
    private readonly limit: number,
    private readonly onOverflow: () => void,
    private readonly onClose: () => void,
  ) {}

  /** Adds an item for the subscriber; past the limit the queue closes instead. */
  push(item: T): void {
    if (this.closed) return
    if (this.waiting) {
      const { resolve } = this.waiting
      this.waiting = undefined
      resolve({ value: item, done: false })
      return
    }
    if (this.items.length >= this.limit) {
      this.close()
      this.onOverflow()
      return
    }
    this.items.push(item)
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
    this.onClose()
  }

  /** Ends the queue with an error: the reader's next read throws it. */
  fail(error: Error): void {
    if (this.closed) return
    this.failure = error
    this.close()
  }
}
