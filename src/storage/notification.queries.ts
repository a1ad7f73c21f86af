import { type SQL, and, count, eq, gte, inArray, lt, notInArray, sql } from 'drizzle-orm'
import type { CallbackRecord } from '../model/callback.record.js'
import type { LogPosition } from '../model/log.position.js'
import { callbacks } from './tables/callback.table.js'
import { ownedBy, taskAuthorOf } from './tables/task.owner.js'
import { type Db, resultRows } from './database.client.js'
import {
  afterPosition,
  beforePosition,
  FINAL,
  finalPrefix,
  type LogRead,
  LOGGED_COLUMNS,
  NEWEST_FIRST,
  OLDEST_FIRST,
} from './log.kernel.js'

/**
 * A stored callback as the graph reads it: its place in the log, the typed columns and values
 * parsed at ingest, and the request's method, query and body (the fields as sent, read only when
 * asked for). Every read of notifications sees only callbacks whose place in the log is final
 * (log.kernel.ts), in log order, so a cursor from any list resumes exactly.
 */
export interface NotificationRow
  extends LogPosition,
    Pick<
      CallbackRecord,
      | 'type'
      | 'serviceCode'
      | 'taskId'
      | 'userName'
      | 'vsId'
      | 'serviceCreatedAt'
      | 'receivedAt'
      | 'values'
      | 'signature'
      | 'method'
      | 'query'
      | 'body'
    > {
  /** How many times the service delivered it (a redelivery is kept once). */
  deliveries: number
  /** Who started its task, as the projection knew when the row was read: read only by the realtime engine's tail. */
  taskAuthor?: string | null
}

/** Which stored callbacks to read; every criterion given must hold. */
export interface NotificationCriteria {
  serviceCode?: string | null | undefined
  /** Any of these types; an empty list matches nothing. */
  types?: readonly number[] | null | undefined
  taskId?: string | null | undefined
  /** Any of these tasks (`hashed_id`); an empty list matches nothing. */
  taskIds?: readonly string[] | null | undefined
  /** The user exactly as the callback names it. */
  userName?: string | null | undefined
  /**
   * Any of these published types, or (with `unknownKinds`) any type outside `knownTypes`; an
   * empty list without `unknownKinds` matches nothing. Flat fields, as the realtime engine groups
   * subscribers by their top-level keys.
   */
  kindTypes?: readonly number[] | null | undefined
  unknownKinds?: boolean | null | undefined
  /** Every published type: what `unknownKinds` excludes. */
  knownTypes?: readonly number[] | null | undefined
  /** `received_at` at or after this time. */
  receivedFrom?: Date | null | undefined
  /** `received_at` before this time. */
  receivedTo?: Date | null | undefined
  /** The caller's scope: only these service codes (undefined: all). */
  allowedServiceCodes?: readonly string[] | undefined
  /** The caller's scope: only this user's notifications (`tables/task.owner.ts`; undefined: every user's). */
  allowedUserName?: string | undefined
}

/** One page in newest-first order: at most `limit` rows before a position. */
export interface NotificationPageRequest {
  before?: LogPosition | undefined
  limit: number
  /** Read below this horizon (`horizonLook`; waited for in reads/notification.list.ts); final now when absent. */
  horizon?: string | undefined
}

/** Callbacks written by transactions below a horizon: final, and the same set however late they are read. */
function below(horizon: string | undefined): SQL {
  return horizon === undefined ? FINAL : sql`${callbacks.xid} < ${horizon}::xid8`
}

const rowColumns = {
  ...LOGGED_COLUMNS,
  deliveries: callbacks.deliveries,
  signature: callbacks.signature,
  method: callbacks.method,
  query: callbacks.query,
  body: callbacks.body,
}

/** The conditions of the criteria, on callbacks whose place is `final` (final now, by default). */
export function matching(criteria: NotificationCriteria, final: SQL = FINAL): SQL[] {
  const conditions: SQL[] = [final]
  if (criteria.serviceCode != null) conditions.push(eq(callbacks.serviceCode, criteria.serviceCode))
  if (criteria.types != null) conditions.push(inArray(callbacks.type, [...criteria.types]))
  if (criteria.taskId != null) conditions.push(eq(callbacks.taskId, criteria.taskId))
  if (criteria.taskIds != null)
    conditions.push(criteria.taskIds.length > 0 ? inArray(callbacks.taskId, [...criteria.taskIds]) : sql`false`)
  if (criteria.kindTypes != null) {
    const known = criteria.kindTypes.length > 0 ? inArray(callbacks.type, [...criteria.kindTypes]) : sql`false`
    const unknown = criteria.unknownKinds ? notInArray(callbacks.type, [...(criteria.knownTypes ?? [])]) : sql`false`
    conditions.push(sql`(${known} or ${unknown})`)
  }
  if (criteria.userName != null) conditions.push(eq(callbacks.userName, criteria.userName))
  if (criteria.receivedFrom != null) conditions.push(gte(callbacks.receivedAt, criteria.receivedFrom))
  if (criteria.receivedTo != null) conditions.push(lt(callbacks.receivedAt, criteria.receivedTo))
  if (criteria.allowedServiceCodes !== undefined)
    conditions.push(inArray(callbacks.serviceCode, [...criteria.allowedServiceCodes]))
  if (criteria.allowedUserName !== undefined) conditions.push(ownedBy('callbacks', criteria.allowedUserName))
  return conditions
}

/** Whether a row matches the criteria: the same rules as the SQL above, for rows already read. */
export function notificationMatches(criteria: NotificationCriteria, row: NotificationRow): boolean {
  if (criteria.serviceCode != null && row.serviceCode !== criteria.serviceCode) return false
  if (criteria.types != null && !criteria.types.includes(row.type)) return false
  if (criteria.taskId != null && row.taskId !== criteria.taskId) return false
  if (criteria.taskIds != null && (row.taskId === null || !criteria.taskIds.includes(row.taskId))) return false
  if (
    criteria.kindTypes != null &&
    !criteria.kindTypes.includes(row.type) &&
    !(criteria.unknownKinds && !(criteria.knownTypes ?? []).includes(row.type))
  )
    return false
  if (criteria.userName != null && row.userName !== criteria.userName) return false
  if (criteria.receivedFrom != null && row.receivedAt < criteria.receivedFrom) return false
  if (criteria.receivedTo != null && !(row.receivedAt < criteria.receivedTo)) return false
  if (criteria.allowedServiceCodes !== undefined && !criteria.allowedServiceCodes.includes(row.serviceCode))
    return false
  const owner = criteria.allowedUserName
  if (owner !== undefined && row.userName !== owner && row.taskAuthor !== owner) return false
  return true
}

/**
 * Stored callbacks after a position, oldest first: what a subscriber that reconnects with a
 * cursor missed.
 */
export async function notificationsAfter(
  db: Db,
  criteria: NotificationCriteria,
  after: LogPosition,
  limit: number,
): Promise<NotificationRow[]> {
  return db
    .select(rowColumns)
    .from(callbacks)
    .where(and(...matching(criteria), afterPosition(after)))
    .orderBy(...OLDEST_FIRST)
    .limit(limit)
}

/**
 * Every callback after a position, oldest first, up to the first that is not final yet: what
 * the realtime engine hands to live subscribers.
 */
export async function logTail(
  db: Db,
  after: LogPosition,
  limit: number,
): Promise<LogRead<NotificationRow & { final: boolean; traceparent: string | null }>> {
  // traceparent: the hub's delivery span links to the span that committed each callback. taskAuthor: a
  // broadcaster's own view is matched by it (notificationMatches), one index probe per row.
  const taskAuthor = taskAuthorOf('callbacks')
  const rows = await db
    .select({ ...rowColumns, final: sql<boolean>`${FINAL}`, traceparent: callbacks.traceparent, taskAuthor })
    .from(callbacks)
    .where(afterPosition(after))
    .orderBy(...OLDEST_FIRST)
    .limit(limit)
  return finalPrefix(rows)
}

/** The callbacks with these ids, in one statement; only those in scope when one is given. */
export async function notificationsByIds(
  db: Db,
  ids: readonly number[],
  allowedServiceCodes?: readonly string[],
  allowedUserName?: string,
): Promise<NotificationRow[]> {
  if (ids.length === 0) return []
  return db
    .select(rowColumns)
    .from(callbacks)
    .where(and(inArray(callbacks.id, [...ids]), ...matching({ allowedServiceCodes, allowedUserName })))
}

/**
 * A page of stored callbacks, newest first. The page is cut by position (keyset), never by
 * OFFSET, so a cursor stays valid while new callbacks arrive and deep pages cost no more than
 * the first.
 */
export async function notificationPage(
  db: Db,
  criteria: NotificationCriteria,
  page: NotificationPageRequest,
): Promise<NotificationRow[]> {
  const conditions = matching(criteria, below(page.horizon))
  if (page.before !== undefined) conditions.push(beforePosition(page.before))
  return db
    .select(rowColumns)
    .from(callbacks)
    .where(and(...conditions))
    .orderBy(...NEWEST_FIRST)
    .limit(page.limit)
}

/** How many stored callbacks match, on every page together: below `horizon`, as the page read it. */
export async function countNotifications(db: Db, criteria: NotificationCriteria, horizon?: string): Promise<number> {
  const [row] = await db
    .select({ total: count() })
    .from(callbacks)
    .where(and(...matching(criteria, below(horizon))))
  return row?.total ?? 0
}

/**
 * The newest `perTask` callbacks of each task, in one statement for any number of tasks: for each
 * task a lateral subquery reads its newest rows straight off `callbacks_task_position_idx` and stops
 * at `perTask`, so the cost is the rows returned, however many a task has stored. Tasks with no
 * callbacks map to an empty list; each list is newest first.
 */
export async function latestNotificationsForTasks(
  db: Db,
  taskIds: readonly string[],
  perTask: number,
  allowedServiceCodes?: readonly string[],
  allowedUserName?: string,
): Promise<Map<string, NotificationRow[]>> {
  const byTask = new Map<string, NotificationRow[]>(taskIds.map((id) => [id, []]))
  if (taskIds.length === 0 || perTask <= 0) return byTask
  const wanted = sql`unnest(array[${sql.join(
    [...new Set(taskIds)].map((id) => sql`${id}`),
    sql`, `,
  )}]::text[]) as wanted(task_id)`
  const scope = sql.join([
    allowedServiceCodes !== undefined ? sql` and ${inArray(callbacks.serviceCode, [...allowedServiceCodes])}` : sql``,
    allowedUserName !== undefined ? sql` and ${ownedBy('callbacks', allowedUserName)}` : sql``,
  ])
  // A page of tasks reads 5 rows of each of 50: Drizzle's row mapping (per column, per row) cost
  // more than the rest of their way from row to answer, so the rows are read as the driver gives
  // them, with the times as epoch milliseconds (one number, no date text to parse).
  const result = await db.execute(sql`
    select l.xid::text as xid, l.id::float8 as id, l.type, l.service_code as "serviceCode", l.task_id as "taskId",
      l.user_name as "userName",
      l.vs_id as "vsId", floor(extract(epoch from l.service_created_at) * 1000)::float8 as "serviceCreatedAt",
      floor(extract(epoch from l.received_at) * 1000)::float8 as "receivedAt", l.deliveries, l.values, l.signature,
        l.method, l.query, l.body
    from ${wanted} cross join lateral (
      select * from ${callbacks} where ${callbacks.taskId} = wanted.task_id and ${FINAL}${scope}
      order by ${callbacks.xid} desc, ${callbacks.id} desc limit ${perTask}
    ) l
    order by l.xid desc, l.id desc`)
  for (const row of resultRows<RawNotificationRow>(result)) {
    byTask.get(row.taskId as string)?.push({
      ...row,
      serviceCreatedAt: row.serviceCreatedAt === null ? null : new Date(row.serviceCreatedAt),
      receivedAt: new Date(row.receivedAt),
      body: Buffer.isBuffer(row.body)
        ? row.body
        : Buffer.from(row.body.buffer, row.body.byteOffset, row.body.byteLength),
    })
  }
  return byTask
}

/**
 * A {@link NotificationRow} as a raw statement reads it: times as epoch milliseconds, bytes as either driver gives
 * them.
 */
interface RawNotificationRow extends Omit<NotificationRow, 'serviceCreatedAt' | 'receivedAt' | 'body'> {
  serviceCreatedAt: number | null
  receivedAt: number
  body: Uint8Array
}

/** How many stored callbacks each task has, in one statement for any number of tasks. */
export async function countNotificationsForTasks(
  db: Db,
  taskIds: readonly string[],
  allowedServiceCodes?: readonly string[],
  allowedUserName?: string,
): Promise<Map<string, number>> {
  const counts = new Map<string, number>(taskIds.map((id) => [id, 0]))
  if (taskIds.length === 0) return counts
  const rows = await db
    .select({ taskId: callbacks.taskId, total: count() })
    .from(callbacks)
    .where(and(inArray(callbacks.taskId, [...new Set(taskIds)]), ...matching({ allowedServiceCodes, allowedUserName })))
    .groupBy(callbacks.taskId)
  for (const row of rows) counts.set(row.taskId as string, row.total)
  return counts
}
