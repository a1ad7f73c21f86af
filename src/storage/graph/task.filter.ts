import { and, eq, gte, inArray, lt, or, type SQL, sql } from 'drizzle-orm'
import { type TaskRow, tasks } from '../tables/graph.table.js'
import { foldCase, foldCaseSql, prefixPattern } from '../tables/text.match.js'

/** The `tasks` query's filter, already validated. Every criterion given must hold. */
export interface TaskQuery {
  serviceCode?: string | null | undefined
  status?: readonly string[] | null | undefined
  /**
   * Any of these tasks, as [service code, `hashed_id`]; an empty list matches nothing. Tuples,
   * not objects: the realtime engine groups subscribers by the filter's JSON over its top-level keys.
   */
  keys?: ReadonlyArray<readonly [string, string]> | null | undefined
  /** Any of these `hashed_id`s; an empty list matches nothing. */
  taskIds?: readonly string[] | null | undefined
  /** The user who started the live: A–Z case-insensitive prefix (see {@link foldCase}). */
  userName?: string | null | undefined
  /** Started by any of these users, as [service code, user name], exactly; an empty list matches nothing. */
  owners?: ReadonlyArray<readonly [string, string]> | null | undefined
  vsId?: string | null | undefined
  startedFrom?: Date | null | undefined
  startedTo?: Date | null | undefined
  /** The caller's scope: only these service codes (undefined: all). */
  allowedServiceCodes?: readonly string[] | undefined
  /** The caller's scope: only the tasks this user started (a broadcaster's own view; undefined: every user's). */
  allowedUserName?: string | undefined
}

/** Where a page of tasks starts: the last task seen, by its sort time and row id. */
export interface TaskKey {
  sortAt: number
  id: number
}

// The server a task is on, as the fold derives it (deriveTask's vsId): the latest callback's
// `vs_id`, else the task list's.
const taskVsId = sql`coalesce(${tasks.state}->'vsId'->>'value', ${tasks.state}->'sighting'->'task'->'value'->>'vs_id')`

/** The same as {@link taskVsId}, for a row already read. */
function rowVsId(row: Pick<TaskRow, 'state'>): string | null {
  const vsId = row.state.vsId?.value ?? row.state.sighting.task?.value.vs_id
  return vsId === undefined || vsId === null ? null : String(vsId)
}

export function taskConditions(filter: TaskQuery): SQL | undefined {
  return and(
    filter.serviceCode ? eq(tasks.serviceCode, filter.serviceCode) : undefined,
    filter.status && filter.status.length > 0 ? inArray(tasks.status, [...filter.status]) : undefined,
    filter.keys ? keyCondition(filter.keys) : undefined,
    filter.taskIds ? (filter.taskIds.length > 0 ? inArray(tasks.taskId, [...filter.taskIds]) : sql`false`) : undefined,
    filter.userName ? sql`${foldCaseSql(tasks.author)} like ${prefixPattern(filter.userName)}` : undefined,
    filter.owners ? ownerCondition(filter.owners) : undefined,
    filter.vsId ? sql`${taskVsId} = ${filter.vsId}` : undefined,
    filter.startedFrom ? gte(tasks.sortAt, filter.startedFrom) : undefined,
    filter.startedTo ? lt(tasks.sortAt, filter.startedTo) : undefined,
    filter.allowedServiceCodes !== undefined ? inArray(tasks.serviceCode, [...filter.allowedServiceCodes]) : undefined,
    filter.allowedUserName !== undefined ? eq(tasks.author, filter.allowedUserName) : undefined,
  )
}

function keyCondition(keys: ReadonlyArray<readonly [string, string]>): SQL {
  if (keys.length === 0) return sql`false`
  return or(
    ...keys.map(([serviceCode, taskId]) => and(eq(tasks.serviceCode, serviceCode), eq(tasks.taskId, taskId))),
  ) as SQL
}

function ownerCondition(owners: ReadonlyArray<readonly [string, string]>): SQL {
  if (owners.length === 0) return sql`false`
  return or(
    ...owners.map(([serviceCode, userName]) => and(eq(tasks.serviceCode, serviceCode), eq(tasks.author, userName))),
  ) as SQL
}

/** Whether a task row matches the filter: the same rules as the SQL above, for rows already read. */
export function taskMatches(
  filter: TaskQuery,
  row: Pick<TaskRow, 'serviceCode' | 'taskId' | 'status' | 'author' | 'sortAt' | 'state'>,
): boolean {
  if (filter.serviceCode && row.serviceCode !== filter.serviceCode) return false
  if (filter.status && filter.status.length > 0 && !filter.status.includes(row.status)) return false
  if (
    filter.keys &&
    !filter.keys.some(([serviceCode, taskId]) => serviceCode === row.serviceCode && taskId === row.taskId)
  )
    return false
  if (filter.taskIds && !filter.taskIds.includes(row.taskId)) return false
  if (filter.userName && !(row.author !== null && foldCase(row.author).startsWith(foldCase(filter.userName))))
    return false
  if (
    filter.owners &&
    !filter.owners.some(([serviceCode, userName]) => serviceCode === row.serviceCode && userName === row.author)
  )
    return false
  if (filter.vsId && rowVsId(row) !== filter.vsId) return false
  if (filter.startedFrom && row.sortAt < filter.startedFrom) return false
  if (filter.startedTo && !(row.sortAt < filter.startedTo)) return false
  if (filter.allowedServiceCodes !== undefined && !filter.allowedServiceCodes.includes(row.serviceCode)) return false
  if (filter.allowedUserName !== undefined && row.author !== filter.allowedUserName) return false
  return true
}

/**
 * What {@link taskConditions} writes for this filter, without its values: which criteria are
 * there, and each list's length (a list is one placeholder per value). Two filters of one shape
 * have one statement text.
 */
export function taskFilterShape(filter: TaskQuery): string {
  const length = (list: readonly unknown[] | null | undefined) => (list ? String(list.length) : '')
  return [
    filter.serviceCode ? 'c' : '',
    filter.status && filter.status.length > 0 ? filter.status.length : '',
    length(filter.keys),
    length(filter.taskIds),
    filter.userName ? 'u' : '',
    length(filter.owners),
    filter.vsId ? 'v' : '',
    filter.startedFrom ? 'f' : '',
    filter.startedTo ? 't' : '',
    filter.allowedServiceCodes !== undefined ? filter.allowedServiceCodes.length : '',
    filter.allowedUserName !== undefined ? 'a' : '',
  ].join(',')
}

/** The values {@link taskConditions} binds for this filter, in its order, as the driver is given them. */
export function taskFilterParams(filter: TaskQuery, out: unknown[]): unknown[] {
  if (filter.serviceCode) out.push(filter.serviceCode)
  if (filter.status && filter.status.length > 0) out.push(...filter.status)
  if (filter.keys) for (const [serviceCode, taskId] of filter.keys) out.push(serviceCode, taskId)
  if (filter.taskIds) out.push(...filter.taskIds)
  if (filter.userName) out.push(prefixPattern(filter.userName))
  if (filter.owners) for (const [serviceCode, userName] of filter.owners) out.push(serviceCode, userName)
  if (filter.vsId) out.push(filter.vsId)
  if (filter.startedFrom) out.push(tasks.sortAt.mapToDriverValue(filter.startedFrom))
  if (filter.startedTo) out.push(tasks.sortAt.mapToDriverValue(filter.startedTo))
  if (filter.allowedServiceCodes !== undefined) out.push(...filter.allowedServiceCodes)
  if (filter.allowedUserName !== undefined) out.push(filter.allowedUserName)
  return out
}
