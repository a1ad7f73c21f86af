import { WakeScheduler } from '../wake.scheduler.js'

/** What {@link GroupCommit} is built from. */
export interface GroupCommitOptions<I, O> {
  /**
   * Writes a batch in one transaction; resolves to one outcome per item, in order, only once
   * the batch is committed.
   */
  commit: (items: I[]) => Promise<O[]>
  /** The most items one transaction takes. */
  maxBatch: number
  /**
   * Whether an error belongs to the data of some item rather than to the database as a whole:
   * a batch failing so is retried item by item, so one bad item cannot sink its neighbours.
   */
  isItemError?: (error: unknown) => boolean
}

interface Waiting<I, O> {
  item: I
  resolve: (outcome: O) => void
  reject: (error: unknown) => void
}

/**
 * Group commit: items arriving while a transaction is in flight wait and go together in the
 * next one, so a busy writer pays one commit (one fsync) per batch instead of one per item,
 * while an idle one commits a lone item at once. One batch is in flight at a time (measured
 * against two: larger batches, less CPU per item, sooner answers), so batches commit in order.
 */
export class GroupCommit<I, O> {
  private waiting: Array<Waiting<I, O>> = []
  private readonly batches = new WakeScheduler({
    run: async () => {
      await this.run(this.waiting.splice(0, this.options.maxBatch))
      return { again: this.waiting.length > 0 }
    },
  })

  constructor(private readonly options: GroupCommitOptions<I, O>) {}

  /** Resolves with the item's outcome once its batch has committed; rejects if it did not. */
  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject })
      // Items submitted in the same turn of the event loop join the first batch.
      if (this.batches.busy) this.batches.wake()
      else this.batches.wakeSoon()
    })
  }

  /** Items waiting for a batch (not counting the one in flight). */
  get depth(): number {
    return this.waiting.length
  }

  private async run(batch: Array<Waiting<I, O>>): Promise<void> {
    let outcomes: O[]
    try {
      outcomes = await this.options.commit(batch.map((w) => w.item))
    } catch (error) {
      if (batch.length > 1 && this.options.isItemError?.(error)) {
        for (const one of batch) await this.run([one])
      } else {
        for (const w of batch) w.reject(error)
      }
      return
    }
    batch.forEach((w, i) => w.resolve(outcomes[i] as O))
  }
}

/**
 * Whether a PostgreSQL error is about the data of a statement (SQLSTATE classes 22, data
 * exception, and 23, integrity constraint violation) rather than the connection or the server.
 */
export function isDataError(error: unknown): boolean {
  for (let e: unknown = error; e && typeof e === 'object'; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string' && /^2[23][0-9A-Z]{3}$/.test(code)) return true
  }
  return false
}
