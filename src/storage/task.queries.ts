import { and, count, desc, eq, gte, inArray, lt, or, type SQL, sql } from 'drizzle-orm'
import type { Db } from './database.client.js'
import { type TaskRow, tasks } from './graph.table.js'

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

/** A page of tasks, newest start first, after `after` (keyset: flat cost however deep the page). */
export function listTasks(db: Db, filter: TaskQuery, after: TaskKey | undefined, limit: number): Promise<TaskRow[]> {
  const keyset = after ? sql`(${tasks.sortAt}, ${tasks.id}) < (${new Date(after.sortAt).toISOString()}::timestamptz, ${after.id})` : undefined
  return db
    .select()
    .from(tasks)
    .where(and(taskConditions(filter), keyset))
    .orderBy(desc(tasks.sortAt), desc(tasks.id))
    .limit(limit)
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
