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

/**
 * One look at the log's tail for a list: the horizon (a transaction id below which every
 * callback's place is final, as the text of an xid8) and the newest matching callback committed
 * past it, or null. A list reads only final callbacks (a cursor from it resumes a subscription
 * exactly), and a callback is final only once every older transaction on the server has ended:
 * one acknowledged a moment ago may still wait behind another worker's group commit or a
 * projector's pass. Whoever lists waits, by looking again, until the horizon has passed `newest`
 * (adapters/graphql/reads/notification.list.ts, on the one scheduler's retry); storage only looks.
 */
export async function horizonLook(
  db: Db,
  criteria: NotificationCriteria,
): Promise<{ horizon: string; newest: string | null }> {
  // Only the log's tail past the horizon is looked at: the rows that are not final yet.
  const [row] = resultRows<{ horizon: string; newest: string | null }>(
    await db.execute(sql`select pg_snapshot_xmin(q.s)::text as horizon, (select max(${callbacks.xid})::text
      from ${callbacks} where ${and(...matching(criteria, sql`${callbacks.xid} >= pg_snapshot_xmin(q.s)`))}) as newest
      from (select pg_current_snapshot() as s) q`),
  )
  return { horizon: row?.horizon ?? '0', newest: row?.newest ?? null }
}

/**
 * A page of stored callbacks, newest first, and the count of all that match: both below one
 * horizon, so the page and its `totalCount` read the same rows however much later the count runs.
 */
export async function notificationPageAt(
  db: Db,
  criteria: NotificationCriteria,
  page: Omit<NotificationPageRequest, 'horizon'>,
  horizon: string,
): Promise<{ rows: NotificationRow[]; countAll: () => Promise<number> }> {
  const rows = await notificationPage(db, criteria, { ...page, horizon })
  return { rows, countAll: () => countNotifications(db, criteria, horizon) }
}
