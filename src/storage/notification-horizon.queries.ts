import { and, sql } from 'drizzle-orm'
import { type Db, resultRows } from './database.client.js'
import {
  countNotifications,
  matching,
  type NotificationCriteria,
  type NotificationPageRequest,
  type NotificationRow,
  notificationPage,
} from './notification.queries.js'
import { callbacks } from './tables/callback.table.js'

// How long a list waits for the transactions older than a matching callback to end (see listHorizon).
const SETTLE_LIMIT_MS = 5000

/**
 * The horizon a list and its count are read at: a transaction id below which every callback's
 * place is final, given as the text of an xid8. A list reads only final callbacks (a cursor from
 * it resumes a subscription exactly), and a callback is final only once every older transaction
 * on the server has ended: one acknowledged a moment ago may still wait behind another worker's
 * group commit or a projector's pass, and a list read then would not show it. So, when matching
 * callbacks have committed past the current horizon, the list waits (briefly, bounded by
 * SETTLE_LIMIT_MS against a transaction left open) until the horizon has passed them: a callback
 * acknowledged before the request is then on its page, whichever worker asks. The page and its
 * `totalCount` both read below the one horizon: the same rows, however much later the count runs.
 */
export async function listHorizon(db: Db, criteria: NotificationCriteria): Promise<string> {
  const deadline = performance.now() + SETTLE_LIMIT_MS
  let pending: string | null = null
  for (let wait = 1; ; wait = Math.min(wait * 2, 50)) {
    // Only the log's tail past the horizon is looked at: the rows that are not final yet.
    const [row] = resultRows<{ horizon: string; newest: string | null }>(
      await db.execute(sql`select pg_snapshot_xmin(q.s)::text as horizon, (select max(${callbacks.xid})::text
        from ${callbacks} where ${and(...matching(criteria, sql`${callbacks.xid} >= pg_snapshot_xmin(q.s)`))}) as newest
        from (select pg_current_snapshot() as s) q`),
    )
    const horizon = row?.horizon ?? '0'
    // The newest matching callback committed at the first look: those committed later need not be waited for.
    pending ??= row?.newest ?? null
    if (pending === null || BigInt(horizon) > BigInt(pending) || performance.now() >= deadline) return horizon
    await new Promise((resolve) => setTimeout(resolve, wait))
  }
}

/** A page of stored callbacks, newest first, and the count of all that match: both below one horizon. */
export async function notificationList(
  db: Db,
  criteria: NotificationCriteria,
  page: Omit<NotificationPageRequest, 'horizon'>,
): Promise<{ rows: NotificationRow[]; countAll: () => Promise<number> }> {
  const horizon = await listHorizon(db, criteria)
  const rows = await notificationPage(db, criteria, { ...page, horizon })
  return { rows, countAll: () => countNotifications(db, criteria, horizon) }
}
