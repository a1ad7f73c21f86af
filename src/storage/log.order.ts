import { asc, desc, type SQL, sql } from 'drizzle-orm'
import type { LogPosition } from '../model/log.position.js'
import { callbacks } from './tables/callback.table.js'

/**
 * Callbacks whose writing transaction, and every transaction older than it, has ended: nothing
 * can commit before them any more, so their place in the log is final. Every reader of the log
 * (lists, replays, the event hub, the projector) reads only these.
 */
export const FINAL: SQL = sql`${callbacks.xid} < pg_snapshot_xmin(pg_current_snapshot())`

/** Callbacks after a position. */
export function afterPosition(position: LogPosition): SQL {
  return sql`(${callbacks.xid}, ${callbacks.id}) > (${position.xid}::xid8, ${position.id}::bigint)`
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
