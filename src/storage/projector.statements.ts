import { sql } from 'drizzle-orm'
import type { FoldableRecord } from '../fold/fold.event.js'
import type { LogPosition } from '../model/log.position.js'
import { callbacks } from './tables/callback.table.js'
import { type Db, resultRows } from './database.client.js'
import { afterPosition, FINAL, finalPrefix, type LogRead, LOGGED_COLUMNS, OLDEST_FIRST } from './log.kernel.js'

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
    await tx.execute(
      sql`select pg_try_advisory_xact_lock(hashtextextended('livegate:projector', 0)) as locked,
        set_config('synchronous_commit', 'off', true)`,
    ),
  )
  return row?.locked === true
}

/** The next final callbacks after a position, oldest first (the committed prefix, log.kernel.ts). */
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
