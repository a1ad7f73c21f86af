import { and, eq, inArray, sql } from 'drizzle-orm'
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

/**
 * Takes or keeps many leases in one statement, each as {@link acquireLease} does; resolves to the
 * names `holder` holds now (a lease another holds unexpired is left as it is, and not returned).
 */
export async function acquireLeases(
  db: Db,
  names: readonly string[],
  holder: string,
  ttlMs: number,
): Promise<Set<string>> {
  if (names.length === 0) return new Set()
  const expiresAt = sql`now() + make_interval(secs => ${ttlMs / 1000})`
  const rows = await db
    .insert(leases)
    .values(names.map((name) => ({ name, holder, expiresAt })))
    .onConflictDoUpdate({
      target: leases.name,
      set: { holder, expiresAt },
      setWhere: sql`${leases.holder} = ${holder} or ${leases.expiresAt} < now()`,
    })
    .returning({ name: leases.name, holder: leases.holder })
  return new Set(rows.filter((row) => row.holder === holder).map((row) => row.name))
}

/** Gives up every lease of these names that `holder` still holds. */
export async function releaseLeases(db: Db, names: readonly string[], holder: string): Promise<void> {
  if (names.length === 0) return
  await db.delete(leases).where(and(inArray(leases.name, [...names]), eq(leases.holder, holder)))
}

/** Which of these leases someone holds unexpired. */
export async function heldLeases(db: Db, names: readonly string[]): Promise<Set<string>> {
  if (names.length === 0) return new Set()
  const rows = await db
    .select({ name: leases.name })
    .from(leases)
    .where(and(inArray(leases.name, [...names]), sql`${leases.expiresAt} >= now()`))
  return new Set(rows.map((row) => row.name))
}
