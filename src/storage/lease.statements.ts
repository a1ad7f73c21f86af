import { and, eq, sql } from 'drizzle-orm'
import type { Db } from './database.client.js'
import { leases } from './tables/lease.table.js'

/**
 * Takes a lease, or keeps it, for `ttlMs` from now by the database's clock: it succeeds when the
 * lease is free, expired, or already this holder's. Returns whether `holder` holds it now.
 * One statement, so two instances racing for a free lease cannot both win.
 */
export async function acquireLease(db: Db, name: string, holder: string, ttlMs: number): Promise<boolean> {
  const expiresAt = sql`now() + make_interval(secs => ${ttlMs / 1000})`
  const rows = await db
    .insert(leases)
    .values({ name, holder, expiresAt })
    .onConflictDoUpdate({
      target: leases.name,
      set: { holder, expiresAt },
      setWhere: sql`${leases.holder} = ${holder} or ${leases.expiresAt} < now()`,
    })
    .returning({ holder: leases.holder })
  return rows.length === 1 && rows[0]?.holder === holder
}

/** Gives a lease up, if `holder` still holds it, so another instance may take it at once. */
export async function releaseLease(db: Db, name: string, holder: string): Promise<void> {
  await db.delete(leases).where(and(eq(leases.name, name), eq(leases.holder, holder)))
}

/** Who holds a lease that has not expired, or null. */
export async function leaseHolder(db: Db, name: string): Promise<string | null> {
  const [row] = await db
    .select({ holder: leases.holder })
    .from(leases)
    .where(and(eq(leases.name, name), sql`${leases.expiresAt} >= now()`))
  return row?.holder ?? null
}
