import { sql } from 'drizzle-orm'
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

/** Writes callbacks and refusals. Every method resolves only once the row is committed. */
export class CallbackStore {
  constructor(private readonly db: Db) {}

  /**
   * Keeps a callback once: a second delivery of the same callback meets the unique dedupe key
   * and only counts the delivery, in the same statement, so two racing deliveries cannot both
   * insert.
   */
  async keep(row: NewCallbackRow): Promise<KeptCallback> {
    return this.db.transaction(async (tx) => {
      // One writer at a time, across every instance: row ids are then handed out in commit
      // order, which is what lets a subscriber resume after a cursor without a gap.
      await tx.execute(INGEST_LOCK)
      const [kept] = await tx
        .insert(callbacks)
        .values(row)
        .onConflictDoUpdate({
          target: callbacks.dedupeKey,
          set: { deliveries: sql`${callbacks.deliveries} + 1`, lastDeliveredAt: row.lastDeliveredAt },
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

  /** Records a refused delivery for operators. */
  async refuse(row: NewRefusalRow): Promise<void> {
    await this.db.insert(refusals).values(row)
  }
}
