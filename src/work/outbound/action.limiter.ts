/** What {@link RateLimiter.take} decided. */
export type RateDecision = 'allowed' | 'first-refusal' | 'refused'

/**
 * A sliding window of requests per key, in memory: at most `limit` in any `windowMs`. Each
 * process of `serve --workers N` keeps its own, so a key may reach N times the limit across them.
 */
export class RateLimiter {
  private readonly taken = new Map<string, { times: number[]; refusedSince: number | null }>()

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Counts a request of `key` if the window has room; says whether this is the first refusal since the last allowed
   * one.
   */
  take(key: string): RateDecision {
    const at = this.now()
    let entry = this.taken.get(key)
    if (!entry) {
      entry = { times: [], refusedSince: null }
      this.taken.set(key, entry)
    }
    while (entry.times.length > 0 && (entry.times[0] as number) <= at - this.windowMs) entry.times.shift()
    if (entry.times.length < this.limit) {
      entry.times.push(at)
      entry.refusedSince = null
      return 'allowed'
    }
    if (entry.refusedSince !== null && entry.refusedSince > at - this.windowMs) return 'refused'
    entry.refusedSince = at
    return 'first-refusal'
  }

  /**
   * Gives back the newest request `take` counted for `key`: it turned out to be a repeat of one
   * already counted (an idempotent retry that met its original in the database).
   */
  refund(key: string): void {
    this.taken.get(key)?.times.pop()
  }
}
