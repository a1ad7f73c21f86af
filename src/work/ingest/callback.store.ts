import type { CallbackRecord } from '../../model/callback.record.js'
import {
  appendCallbacks,
  type CallbackWrite,
  landedByDedupeKey,
  ringDoorbell,
} from '../../storage/callback.statements.js'
import { type Db, ping } from '../../storage/database.client.js'
import {
  insertRefusal,
  insertRefusalWithin,
  pruneRefusals,
  type RefusalQuota,
} from '../../storage/refusal.statements.js'
import { GroupCommit, isDataError } from './group.commit.js'
import { inSpan, linksTo, tracingActive } from '../tracing.spans.js'
import { WakeScheduler } from '../wake.scheduler.js'

/** Where a kept callback landed: its row id and how many times it has been delivered. */
export interface KeptCallback {
  id: number
  deliveries: number
}

/** How {@link CallbackStore.keep} treats the row. */
export interface KeepOptions {
  /**
   * The row comes from the spool: if this very delivery already landed (the database committed
   * it but the answer was lost, or a replay was cut short), it is not counted a second time.
   */
  replay?: boolean
}

/** Limits on what the store keeps. */
export interface CallbackStoreOptions {
  /** Rows the refusals table keeps; the oldest beyond it are pruned now and then. */
  refusedMaxRows?: number
  /** The most callbacks one statement takes. */
  maxBatch?: number
  /** Told when the doorbell could not be rung (readers then find the callbacks at their next look). */
  onDoorbellError?: (error: unknown) => void
}

interface Keeping {
  row: CallbackRecord
  replay: boolean
}

/**
 * Commits callbacks to the log and records refusals. Every method resolves only once the row is
 * committed. Nothing else happens before the acknowledgement: the graph is a projection of the
 * log, folded afterwards (graph.projector.ts).
 */
export class CallbackStore {
  private readonly refusedMaxRows: number
  private readonly pruneEvery: number
  // Starts due, so a cap lowered since the last run takes effect with the first refusal.
  private refusedSincePrune: number
  private readonly batches: GroupCommit<Keeping, KeptCallback>
  /**
   * Rings after each committed batch, one ring at a time: rings asked for while one is under way
   * become one more ring after it, so a busy writer sends at most one doorbell per round trip and
   * an acknowledgement never waits for one. Its other end: every reader's `PassScheduler`.
   */
  private readonly doorbell: WakeScheduler

  constructor(
    private readonly db: Db,
    options: CallbackStoreOptions = {},
  ) {
    this.refusedMaxRows = options.refusedMaxRows ?? 100_000
    // Pruning now and then rather than per insert: the table overshoots the cap by at most 1%.
    this.pruneEvery = Math.min(1000, Math.max(1, Math.ceil(this.refusedMaxRows / 100)))
    this.refusedSincePrune = this.pruneEvery
    this.doorbell = new WakeScheduler({
      // Caught here, not by the scheduler: a ring asked for meanwhile is still sent after a failed one.
      run: () => ringDoorbell(this.db).then(undefined, (error: unknown) => void options.onDoorbellError?.(error)),
    })
    this.batches = new GroupCommit({
      commit: async (items) => {
        const kept = await (tracingActive() ? tracedBatch(this.db, items) : keepBatch(this.db, items))
        this.doorbell.wake()
        return kept
      },
      maxBatch: options.maxBatch ?? 500,
      isItemError: isDataError,
    })
  }

  /**
   * Keeps a callback once: a second delivery of the same callback only counts the delivery.
   * Callbacks arriving together share one statement (group commit); each resolves only once it
   * has committed.
   */
  keep(row: CallbackRecord, options: KeepOptions = {}): Promise<KeptCallback> {
    return this.batches.submit({ row, replay: options.replay === true })
  }

  /**
   * Records a refused delivery for operators, within its source's quota when one is given;
   * resolves to whether it was recorded. Now and then prunes the oldest beyond the cap.
   */
  async refuse(row: Parameters<typeof insertRefusal>[1], quota?: RefusalQuota): Promise<boolean> {
    if (quota) {
      if (!(await insertRefusalWithin(this.db, row, quota))) return false
    } else await insertRefusal(this.db, row)
    this.refusedSincePrune += 1
    if (this.refusedSincePrune >= this.pruneEvery) {
      this.refusedSincePrune = 0
      await this.pruneRefusals()
    }
    return true
  }

  /** Deletes the oldest refusals beyond the cap; resolves to how many went. */
  pruneRefusals(): Promise<number> {
    return pruneRefusals(this.db, this.refusedMaxRows)
  }

  /** Resolves when the database answers a statement; the replayer's test of "is it back". */
  async ping(): Promise<void> {
    await ping(this.db)
  }
}

/**
 * A batch is one statement for callbacks of many requests, so its span is a trace of its own,
 * linked to each callback's commit span (whose trace is its request's).
 */
function tracedBatch(db: Db, items: Keeping[]): Promise<KeptCallback[]> {
  const links = linksTo(items.map((item) => item.row.traceparent))
  return inSpan('callbacks append', { root: true, links, attributes: { 'livegate.batch.size': items.length } }, () =>
    keepBatch(db, items),
  )
}

/**
 * One statement's worth of callbacks: deliveries of one callback folded into one row (an upsert
 * cannot touch a row twice), replays that had already landed passed over, the rest appended.
 */
async function keepBatch(db: Db, items: Keeping[]): Promise<KeptCallback[]> {
  const outcomes: Array<KeptCallback | undefined> = new Array(items.length)
  const replayKeys = items.filter((item) => item.replay).map((item) => item.row.dedupeKey)
  const landed = await landedByDedupeKey(db, replayKeys)
  const groups = new Map<string, number[]>()
  items.forEach(({ row, replay }, i) => {
    const already = replay ? landed.get(row.dedupeKey) : undefined
    if (already && already.lastDeliveredAt.getTime() === row.lastDeliveredAt.getTime()) {
      outcomes[i] = { id: already.id, deliveries: already.deliveries }
      return
    }
    const group = groups.get(row.dedupeKey)
    if (group) group.push(i)
    else groups.set(row.dedupeKey, [i])
  })
  if (groups.size === 0) return outcomes as KeptCallback[]
  const writes: CallbackWrite[] = [...groups.values()].map((indexes) => {
    const rows = indexes.map((i) => (items[i] as Keeping).row)
    const latest = rows.reduce((a, b) => (b.lastDeliveredAt > a.lastDeliveredAt ? b : a))
    return { ...(rows[0] as CallbackRecord), lastDeliveredAt: latest.lastDeliveredAt, deliveries: rows.length }
  })
  const byKey = new Map((await appendCallbacks(db, writes)).map((row) => [row.dedupeKey, row]))
  for (const [key, indexes] of groups) {
    const row = byKey.get(key)
    if (!row) throw new Error('insert returned no row')
    // Each delivery in the batch is numbered, after those counted before it.
    const before = row.deliveries - indexes.length
    indexes.forEach((i, n) => {
      outcomes[i] = { id: row.id, deliveries: before + n + 1 }
    })
  }
  return outcomes as KeptCallback[]
}
