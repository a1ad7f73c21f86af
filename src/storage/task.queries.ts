import { and, count, eq, gte, inArray, lt, or, type SQL, sql } from 'drizzle-orm'
import type { TaskState } from '../fold/task.fold.js'
import { type Db, resultRows } from './database.client.js'
import { type TaskRow, tasks } from './graph.table.js'
import type { StoredTaskNode } from './task.node.js'

/** The `tasks` query's filter, already validated. */
export interface TaskQuery {
  serviceCode?: string | null | undefined
  status?: readonly string[] | null | undefined
  author?: string | null | undefined
  startedFrom?: Date | null | undefined
  startedTo?: Date | null | undefined
  /** The caller's scope: only these service codes (undefined: all). */
  allowedServiceCodes?: readonly string[] | undefined
}

/** Where a page of tasks starts: the last task seen, by its sort time and row id. */
export interface TaskKey {
  sortAt: number
  id: number
}

function taskConditions(filter: TaskQuery): SQL | undefined {
  return and(
    filter.serviceCode ? eq(tasks.serviceCode, filter.serviceCode) : undefined,
    filter.status && filter.status.length > 0 ? inArray(tasks.status, [...filter.status]) : undefined,
    filter.author ? eq(tasks.author, filter.author) : undefined,
    filter.startedFrom ? gte(tasks.sortAt, filter.startedFrom) : undefined,
    filter.startedTo ? lt(tasks.sortAt, filter.startedTo) : undefined,
    filter.allowedServiceCodes !== undefined ? inArray(tasks.serviceCode, [...filter.allowedServiceCodes]) : undefined,
  )
}

/** Whether a task row matches the filter: the same rules as the SQL above, for rows already read. */
export function taskMatches(filter: TaskQuery, row: Pick<TaskRow, 'serviceCode' | 'status' | 'author' | 'sortAt'>): boolean {
  if (filter.serviceCode && row.serviceCode !== filter.serviceCode) return false
  if (filter.status && filter.status.length > 0 && !filter.status.includes(row.status)) return false
  if (filter.author && row.author !== filter.author) return false
  if (filter.startedFrom && row.sortAt < filter.startedFrom) return false
  if (filter.startedTo && !(row.sortAt < filter.startedTo)) return false
  if (filter.allowedServiceCodes !== undefined && !filter.allowedServiceCodes.includes(row.serviceCode)) return false
  return true
}

/** The task rows for these (service code, task id) pairs, in one statement. */
export function tasksByKeys(db: Db, keys: ReadonlyArray<{ serviceCode: string; taskId: string }>): Promise<TaskRow[]> {
  if (keys.length === 0) return Promise.resolve([])
  return db
    .select()
    .from(tasks)
    .where(or(...keys.map((key) => and(eq(tasks.serviceCode, key.serviceCode), eq(tasks.taskId, key.taskId)))))
}

/** What a read of tasks can be narrowed to, beyond the keys every read has. */
export type TaskColumn = 'status' | 'endReason' | 'author' | 'node'

/** A task as a page reads it: its keys, and the columns it was asked for. */
export interface TaskListRow {
  id: number
  sortAtMs: number
  taskId: string
  serviceCode: string
  status?: string
  endReason?: string | null
  author?: string | null
  /** The stored node; null on a row written before nodes were, which then carries its state. */
  node?: StoredTaskNode | null
  state?: TaskState | null
}

// Read as the driver gives them (no per-row mapping): names as the row's keys, numbers as float8.
const KEY_COLUMNS = 'id::float8 as "id", (extract(epoch from sort_at) * 1000)::float8 as "sortAtMs", task_id as "taskId", service_code as "serviceCode"'
const COLUMN_SQL: Record<TaskColumn, string> = {
  status: 'status',
  endReason: 'end_reason as "endReason"',
  author: 'author',
  // The state (~5 kB) only where no node was written yet.
  node: 'node, case when node is null then state end as state',
}

/**
 * A page of tasks, newest start first, after `after` (keyset: flat cost however deep the page),
 * reading only the `columns` asked for: a page of three scalar fields never reads a state.
 */
export async function listTasks(db: Db, filter: TaskQuery, after: TaskKey | undefined, limit: number, columns: Iterable<TaskColumn>): Promise<TaskListRow[]> {
  const keyset = after ? sql`(${tasks.sortAt}, ${tasks.id}) < (${new Date(after.sortAt).toISOString()}::timestamptz, ${after.id})` : undefined
  const select = [KEY_COLUMNS, ...[...new Set(columns)].map((column) => COLUMN_SQL[column])].join(', ')
  const where = and(taskConditions(filter), keyset) ?? sql`true`
  const result = await db.execute(sql`select ${sql.raw(select)} from ${tasks} where ${where} order by ${tasks.sortAt} desc, ${tasks.id} desc limit ${limit}`)
  return resultRows<TaskListRow>(result)
}

/** How many tasks match the filter. */
export async function countTasks(db: Db, filter: TaskQuery): Promise<number> {
  const [row] = await db.select({ n: count() }).from(tasks).where(taskConditions(filter))
  return row?.n ?? 0
}

/** The tasks with these `hashed_id`s, in one statement (a DataLoader batch). */
export function tasksByTaskIds(db: Db, taskIds: readonly string[], allowedServiceCodes?: readonly string[]): Promise<TaskRow[]> {
  if (taskIds.length === 0) return Promise.resolve([])
  return db
    .select()
    .from(tasks)
    .where(and(inArray(tasks.taskId, [...taskIds]), taskConditions({ allowedServiceCodes })))
}
