import { eq, sql } from 'drizzle-orm'
import type { FoldableRecord } from '../fold/fold.event.js'
import { LOG_START, type LogPosition } from '../model/log.position.js'
import { callbacks, projections } from './tables/callback.table.js'
import { type Db, resultRows } from './database.client.js'
import { afterPosition, FINAL, LOGGED_COLUMNS, OLDEST_FIRST } from './log.order.js'

/** A logged callback as the projector reads it: what the fold needs, and where it is. */
export type LoggedCallback = FoldableRecord & LogPosition & { final: boolean; traceparent: string | null }

/**
 * Takes the projector's lock if no other transaction holds it, until this one ends: at most one
 * projector folds the log at a time, across every instance on the database. In the same round
 * trip, the transaction's commit is made asynchronous (`synchronous_commit = off`, for it alone):
 * a fold is derived from the log and moves its checkpoint in the same transaction, so a crash can
 * lose only the last folds and their checkpoint together, never one without the other, and they
 * are folded again from the log; meanwhile no fold waits for a WAL flush, which the
 * acknowledgements need for themselves.
 */
export async function tryProjectorLock(tx: Db): Promise<boolean> {
  const [row] = resultRows<{ locked: boolean }>(
    await tx.execute(sql`select pg_try_advisory_xact_lock(hashtextextended('livegate:projector', 0)) as locked, set_config('synchronous_commit', 'off', true)`),
  )
  return row?.locked === true
}

/** Where a projection has folded the log up to; the start of the log if it never has. */
export async function readCheckpoint(tx: Db, name: string): Promise<LogPosition> {
  const [row] = await tx.select({ xid: projections.xid, id: projections.id }).from(projections).where(eq(projections.name, name))
  return row ? { xid: row.xid, id: Number(row.id) } : LOG_START
}

/** Moves a projection's checkpoint. */
export async function saveCheckpoint(tx: Db, name: string, position: LogPosition, now: Date): Promise<void> {
  await tx
    .insert(projections)
    .values({ name, xid: position.xid, id: position.id, updatedAt: now })
    .onConflictDoUpdate({ target: projections.name, set: { xid: sql`excluded.xid`, id: sql`excluded.id`, updatedAt: sql`excluded.updated_at` } })
}

/** The next final callbacks after a position, and whether later ones have committed but are not final yet. */
export interface LogRead<R> {
  rows: R[]
  /** A later callback has committed, but an older transaction is still running: read again soon. */
  pending: boolean
}

/**
 * The next final callbacks after a position, oldest first. Final ones are a prefix of the log
 * after any position (a later one was written by a later transaction), so one statement reads
 * them and tells, by the first row that is not, whether to look again soon.
 */
export async function logAfter(tx: Db, position: LogPosition, limit: number): Promise<LogRead<LoggedCallback>> {
  const rows = await tx
    .select({
      final: sql<boolean>`${FINAL}`,
      ...LOGGED_COLUMNS,
      signedAt: callbacks.signedAt,
      dedupeKey: callbacks.dedupeKey,
      // The projector's pass links to the spans that committed what it folds.
      traceparent: callbacks.traceparent,
    })
    .from(callbacks)
    .where(afterPosition(position))
    .orderBy(...OLDEST_FIRST)
    .limit(limit)
  return finalPrefix(rows)
}

/** Splits rows read in log order at the first one that is not final. */
export function finalPrefix<R extends { final: boolean }>(rows: R[]): LogRead<R> {
  const cut = rows.findIndex((row) => !row.final)
  return cut === -1 ? { rows, pending: false } : { rows: rows.slice(0, cut), pending: true }
}
