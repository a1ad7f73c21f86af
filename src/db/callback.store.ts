import { eq, sql } from 'drizzle-orm'
import { type NewCallbackRow, callbacks } from './callback.table.js'
import { callbackEvent } from '../graph/fold.event.js'
import { notifyStatement, taskEvents } from '../realtime/event.model.js'
import type { Db } from './database.client.js'
import { applyCallbackEvents, type GraphChanges } from './graph.store.js'
import { type NewRefusalRow, refusals } from './refusal.table.js'

/** Where a kept callback landed: its row id and how many times it has been delivered. */
export interface KeptCallback {
  id: number
  deliveries: number
  /** The tasks and users this callback changed (none for a repeated delivery). */
  changes: GraphChanges
}

const NO_CHANGES: GraphChanges = { tasks: [], users: [] }

// An arbitrary key of livegate's own for the ingest lock ("livegate" in a phone keypad).
const INGEST_LOCK = sql.raw('select pg_advisory_xact_lock(54834283)')

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
}

/** Writes callbacks and refusals. Every method resolves only once the row is committed. */
export class CallbackStore {
  private readonly refusedMaxRows: number
  private readonly pruneEvery: number
  // Starts due, so a cap lowered since the last run takes effect with the first refusal.
  private refusedSincePrune: number

  constructor(
    private readonly db: Db,
    options: CallbackStoreOptions = {},
  ) {
    this.refusedMaxRows = options.refusedMaxRows ?? 100_000
    // Pruning now and then rather than per insert: the table overshoots the cap by at most 1%.
    this.pruneEvery = Math.min(1000, Math.max(1, Math.ceil(this.refusedMaxRows / 100)))
    this.refusedSincePrune = this.pruneEvery
  }

  /**
   * Keeps a callback once: a second delivery of the same callback meets the unique dedupe key
   * and only counts the delivery, in the same statement, so two racing deliveries cannot both
   * insert.
   */
  async keep(row: NewCallbackRow, options: KeepOptions = {}): Promise<KeptCallback> {
    return this.db.transaction(async (tx) => {
      // One writer at a time, across every instance: row ids are then handed out in commit
      // order, which is what lets a subscriber resume after a cursor without a gap.
      await tx.execute(INGEST_LOCK)
      if (options.replay) {
        const [landed] = await tx
          .select({ id: callbacks.id, deliveries: callbacks.deliveries, lastDeliveredAt: callbacks.lastDeliveredAt })
          .from(callbacks)
          .where(eq(callbacks.dedupeKey, row.dedupeKey))
        if (landed && landed.lastDeliveredAt.getTime() === row.lastDeliveredAt.getTime()) {
          return { id: landed.id, deliveries: landed.deliveries, changes: NO_CHANGES }
        }
      }
      const [kept] = await tx
        .insert(callbacks)
        .values(row)
        .onConflictDoUpdate({
          target: callbacks.dedupeKey,
          // A replayed delivery may be older than one already counted.
          set: { deliveries: sql`${callbacks.deliveries} + 1`, lastDeliveredAt: sql`greatest(${callbacks.lastDeliveredAt}, excluded.last_delivered_at)` },
        })
        .returning({ id: callbacks.id, deliveries: callbacks.deliveries })
      if (!kept) throw new Error('insert returned no row')
      // The graph is folded in the same transaction: a callback is never kept but unfolded.
      const event = kept.deliveries === 1 ? callbackEvent(row) : null
      const changes = event ? await applyCallbackEvents(tx as unknown as Db, row.serviceCode, [event], row.receivedAt) : NO_CHANGES
      if (kept.deliveries === 1) {
        const notify = notifyStatement([{ kind: 'callback', id: kept.id }, ...taskEvents(changes.tasks)])
        if (notify) await tx.execute(notify)
      }
      return { ...kept, changes }
    })
  }

  /** Records a refused delivery for operators; now and then prunes the oldest beyond the cap. */
  async refuse(row: NewRefusalRow): Promise<void> {
    await this.db.insert(refusals).values(row)
    this.refusedSincePrune += 1
    if (this.refusedSincePrune >= this.pruneEvery) {
      this.refusedSincePrune = 0
      await this.pruneRefusals()
    }
  }

  /** Deletes the oldest refusals beyond the cap; resolves to how many went. */
  async pruneRefusals(): Promise<number> {
    // Ids follow arrival, and the primary key finds the cut without sorting the table.
    const deleted = await this.db
      .delete(refusals)
      .where(sql`${refusals.id} <= (select r.id from ${refusals} r order by r.id desc offset ${this.refusedMaxRows} limit 1)`)
      .returning({ id: refusals.id })
    return deleted.length
  }

  /** Resolves when the database answers a statement; the replayer's test of "is it back". */
  async ping(): Promise<void> {
    await this.db.execute(sql`select 1`)
  }
}
