import { sql } from 'drizzle-orm'
import { type NewCallbackRow, callbacks } from './callback.table.js'
import type { Db } from './database.client.js'
import { type NewRefusalRow, refusals } from './refusal.table.js'

/** Where a kept callback landed: its row id and how many times it has been delivered. */
export interface KeptCallback {
  id: number
  deliveries: number
}

/** Writes callbacks and refusals. Every method resolves only once the row is committed. */
export class CallbackStore {
  constructor(private readonly db: Db) {}

  /**
   * Keeps a callback once: a second delivery of the same callback meets the unique dedupe key
   * and only counts the delivery, in the same statement, so two racing deliveries cannot both
   * insert.
   */
  async keep(row: NewCallbackRow): Promise<KeptCallback> {
    const [kept] = await this.db
      .insert(callbacks)
      .values(row)
      .onConflictDoUpdate({
        target: callbacks.dedupeKey,
        set: { deliveries: sql`${callbacks.deliveries} + 1`, lastDeliveredAt: row.lastDeliveredAt },
      })
      .returning({ id: callbacks.id, deliveries: callbacks.deliveries })
    if (!kept) throw new Error('insert returned no row')
    return kept
  }

  /** Records a refused delivery for operators. */
  async refuse(row: NewRefusalRow): Promise<void> {
    await this.db.insert(refusals).values(row)
  }
}
