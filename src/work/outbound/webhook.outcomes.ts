import type { Db } from '../../storage/database.client.js'
import { type AttemptOutcome, recordAttempts } from '../../storage/outbound/webhook.attempts.js'
import { pause, WakeScheduler } from '../wake.scheduler.js'

// Short beside an attempt's round trip and the delivery-lag target (200 ms at the 99th percentile).
const LINGER_MS = 5
// While the database is away, outcomes are stored again this often until their lease ends.
const RETRY_MS = 250

interface Waiting {
  id: number
  outcome: AttemptOutcome
  /** Until when the claim's lease lasts (this process's clock): storing is tried again until then. */
  giveUpAt: number
  settle: (recorded: boolean) => void
  fail: (error: unknown) => void
}

/**
 * Stores attempts' outcomes, many in one statement, for every endpoint of the process: those that
 * end within a few milliseconds of each other, or while a statement is on its way, go together. A delivery costs its
 * claim's share and this, not a statement of
 * its own, so a busy endpoint (or several on the one connection PGlite has) leaves the database
 * to the callbacks. While the database is away, outcomes are stored again until their lease ends:
 * an answer once received is not asked for again unless it could not be stored in time.
 */
export class OutcomeRecorder {
  private waiting: Waiting[] = []
  private stopped = false
  // Its other end: every endpoint's EndpointDelivery, whose attempts wait on `record`.
  private readonly flusher = new WakeScheduler({
    run: async () => {
      await this.flushOne()
      return { again: this.waiting.length > 0 }
    },
  })

  constructor(
    private readonly db: Db,
    private readonly owner: string,
  ) {}

  /** Resolves to whether the outcome was stored (false: the lease had passed to another process). */
  record(id: number, outcome: AttemptOutcome, giveUpAt: number): Promise<boolean> {
    return new Promise<boolean>((settle, fail) => {
      this.waiting.push({ id, outcome, giveUpAt, settle, fail })
      this.flusher.wake()
    })
  }

  /** No more tries once the database is away; what waits is tried once more. */
  async stop(): Promise<void> {
    this.stopped = true
    await this.flusher.settled()
  }

  private async flushOne(): Promise<void> {
    // A moment for the attempts ending about now to join: fewer, larger statements.
    await pause(LINGER_MS)
    const batch = this.waiting
    this.waiting = []
    try {
      const recorded = await recordAttempts(
        this.db,
        this.owner,
        batch.map(({ id, outcome }) => ({ id, outcome })),
      )
      for (const item of batch) item.settle(recorded.has(item.id))
    } catch (error) {
      const now = Date.now()
      const again = batch.filter((item) => !this.stopped && now < item.giveUpAt)
      for (const item of batch) if (!again.includes(item)) item.fail(error)
      this.waiting.unshift(...again)
      if (again.length > 0) await pause(RETRY_MS)
    }
  }
}
