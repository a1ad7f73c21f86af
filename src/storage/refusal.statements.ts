import { sql } from 'drizzle-orm'
import type { RefusalRecord } from '../model/callback.record.js'
import type { Db } from './database.client.js'
import { refusals } from './tables/refusal.table.js'

/** Records a refused delivery. */
export async function insertRefusal(db: Db, record: RefusalRecord): Promise<void> {
  await db.insert(refusals).values(record)
}

/** Deletes the oldest refusals beyond `keep`; resolves to how many went. */
export async function pruneRefusals(db: Db, keep: number): Promise<number> {
  // Ids follow arrival, and the primary key finds the cut without sorting the table.
  const deleted = await db
    .delete(refusals)
    .where(sql`${refusals.id} <= (select r.id from ${refusals} r order by r.id desc offset ${keep} limit 1)`)
    .returning({ id: refusals.id })
  return deleted.length
}
