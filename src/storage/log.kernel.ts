import { type AnyColumn, asc, desc, eq, inArray, type SQL, sql } from 'drizzle-orm'
import { LOG_START, type LogPosition } from '../model/log.position.js'
import { callbacks, projections } from './tables/callback.table.js'
import type { Db } from './database.client.js'

/**
 * The log's kernel, which every reader of an ordered log shares (the projector, the webhook
 * enqueuer, the realtime engine, lists and replays): positions, the committed prefix, and checkpoints.
 * A row's place is its writing transaction, then its id (`model/log.position.ts`); the callbacks
 * and the derived webhook events are both ordered so.
 */

/** The columns that place a row of an ordered log. */
interface Placed {
  xid: AnyColumn
  id: AnyColumn
}

/**
 * Rows whose writing transaction, and every transaction older than it, has ended: nothing can
 * commit before them any more, so their place in the log is final.
 */
export function finalIn(table: Placed): SQL {
  return sql`${table.xid} < pg_snapshot_xmin(pg_current_snapshot())`
}

/** Rows of an ordered log after a position. */
export function afterIn(table: Placed, position: LogPosition): SQL {
  return sql`(${table.xid}, ${table.id}) > (${position.xid}::xid8, ${position.id}::bigint)`
}

/** Callbacks whose place in the log is final: every reader of the log reads only these. */
export const FINAL: SQL = finalIn(callbacks)

/** Callbacks after a position. */
export function afterPosition(position: LogPosition): SQL {
  return afterIn(callbacks, position)
}

/** Callbacks before a position. */
export function beforePosition(position: LogPosition): SQL {
  return sql`(${callbacks.xid}, ${callbacks.id}) < (${position.xid}::xid8, ${position.id}::bigint)`
}

/** Log order, oldest first. */
export const OLDEST_FIRST = [asc(callbacks.xid), asc(callbacks.id)] as const

/** Log order, newest first. */
export const NEWEST_FIRST = [desc(callbacks.xid), desc(callbacks.id)] as const

/** The columns every reader of the log reads: its place, what it is about, and its typed values. */
export const LOGGED_COLUMNS = {
  xid: callbacks.xid,
  id: callbacks.id,
  type: callbacks.type,
  serviceCode: callbacks.serviceCode,
  taskId: callbacks.taskId,
  userName: callbacks.userName,
  vsId: callbacks.vsId,
  serviceCreatedAt: callbacks.serviceCreatedAt,
  receivedAt: callbacks.receivedAt,
  values: callbacks.values,
} as const

/** The position of the newest final callback: where a reader that starts now starts. */
export async function logEnd(db: Db): Promise<LogPosition> {
  const [row] = await db
    .select({ xid: callbacks.xid, id: callbacks.id })
    .from(callbacks)
    .where(FINAL)
    .orderBy(...NEWEST_FIRST)
    .limit(1)
  return row ?? LOG_START
}

/** The next final rows after a position, and whether later ones have committed but are not final yet. */
export interface LogRead<R> {
  rows: R[]
  /** A later row has committed, but an older transaction is still running: read again soon. */
  pending: boolean
}

/**
 * Splits rows read in log order at the first one that is not final: the committed prefix. Final
 * rows are a prefix of the log after any position (a later one was written by a later
 * transaction), so one statement reads them and tells, by the first row that is not, whether to
 * look again soon.
 */
export function finalPrefix<R extends { final: boolean }>(rows: R[]): LogRead<R> {
  const cut = rows.findIndex((row) => !row.final)
  return cut === -1 ? { rows, pending: false } : { rows: rows.slice(0, cut), pending: true }
}

/** Where a reader (a projection, an enqueuer) has read its log up to; the start of the log if it never has. */
export async function readCheckpoint(tx: Db, name: string): Promise<LogPosition> {
  const [row] = await tx
    .select({ xid: projections.xid, id: projections.id })
    .from(projections)
    .where(eq(projections.name, name))
  return row ? { xid: row.xid, id: Number(row.id) } : LOG_START
}

/** Moves a reader's checkpoint. */
export async function saveCheckpoint(tx: Db, name: string, position: LogPosition, now: Date): Promise<void> {
  await tx
    .insert(projections)
    .values({ name, xid: position.xid, id: position.id, updatedAt: now })
    .onConflictDoUpdate({
      target: projections.name,
      set: { xid: sql`excluded.xid`, id: sql`excluded.id`, updatedAt: sql`excluded.updated_at` },
    })
}

/** Sets a checkpoint where none is yet (a first start); one already there is left alone. */
export async function initCheckpoint(db: Db, name: string, position: LogPosition, now: Date): Promise<void> {
  await db
    .insert(projections)
    .values({ name, xid: position.xid, id: position.id, updatedAt: now })
    .onConflictDoNothing()
}

/** Forgets checkpoints: their readers start again where they are told to. */
export async function forgetCheckpoints(db: Db, names: readonly string[]): Promise<void> {
  await db.delete(projections).where(inArray(projections.name, [...names]))
}
