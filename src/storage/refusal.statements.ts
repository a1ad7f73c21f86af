import { sql } from 'drizzle-orm'
import type { RefusalRecord } from '../model/callback.record.js'
import type { Db } from './database.client.js'
import { refusals } from './tables/refusal.table.js'

/** Records a refused delivery. */
export async function insertRefusal(db: Db, record: RefusalRecord): Promise<void> {
  await db.insert(refusals).values(record)
}

/** A source's quota of recorded refusals: at most `perMinute` in any minute, whichever process records them. */
export interface RefusalQuota {
  sourceKey: string
  perMinute: number
}

/**
 * Records a refused delivery unless its source already has `perMinute` refusals recorded in the
 * minute before it; resolves to whether it was recorded. Every worker and instance records into
 * the one table, so the count is taken there, one recorder per source at a time (a transaction
 * lock on the source, released at commit: safe behind a pooler).
 */
export async function insertRefusalWithin(db: Db, record: RefusalRecord, quota: RefusalQuota): Promise<boolean> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`livegate:refusals:${quota.sourceKey}`}))`)
    const since = new Date(record.receivedAt.getTime() - 60_000)
    const [counted] = await tx
      .select({ n: sql<number>`count(*)::int` })
      .from(refusals)
      .where(
        sql`${refusals.sourceKey} = ${quota.sourceKey} and ${refusals.receivedAt} > ${since.toISOString()}::timestamptz`,
      )
    if ((counted?.n ?? 0) >= quota.perMinute) return false
    await tx.insert(refusals).values({ ...record, sourceKey: quota.sourceKey })
    return true
  })
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
