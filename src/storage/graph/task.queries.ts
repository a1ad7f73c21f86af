import { and, count, desc, eq, getTableColumns, gte, inArray, lt, or, type SQL, sql } from 'drizzle-orm'
import type { TaskState } from '../../fold/task.fold.js'
import { type Db, resultRows } from '../database.client.js'
import { type TaskRow, tasks } from '../tables/graph.table.js'
import type { StoredTaskNode } from '../tables/task.node.js'
import { taskNotificationsJsonSql } from './notification.json.js'
import { countTasksKept } from './task-count.statements.js'
import { type TaskJsonKind, type TaskJsonPart, taskJsonPartSql } from './task.json.js'
import { foldCase, foldCaseSql, prefixPattern, userKeyList } from '../tables/text.match.js'

/** A task's natural key: unique across service codes, and stable for its life. */
export interface TaskKeyPair {
  serviceCode: string
  taskId: string
}

/** The `tasks` query's filter, already validated. Every criterion given must hold. */
export interface TaskQuery {
  serviceCode?: string | null | undefined
  status?: readonly string[] | null | undefined
  /**
   * Any of these tasks, as [service code, `hashed_id`]; an empty list matches nothing. Tuples,
   * not objects: the event hub groups subscribers by the filter's JSON over its top-level keys.
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

function taskConditions(filter: TaskQuery): SQL | undefined {
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
  )
}

function keyCondition(keys: ReadonlyArray<readonly [string, string]>): SQL {
  if (keys.length === 0) return sql`false`
  return or(...keys.map(([serviceCode, taskId]) => and(eq(tasks.serviceCode, serviceCode), eq(tasks.taskId, taskId)))) as SQL
}

function ownerCondition(owners: ReadonlyArray<readonly [string, string]>): SQL {
  if (owners.length === 0) return sql`false`
  return or(...owners.map(([serviceCode, userName]) => and(eq(tasks.serviceCode, serviceCode), eq(tasks.author, userName)))) as SQL
}

/** Whether a task row matches the filter: the same rules as the SQL above, for rows already read. */
export function taskMatches(filter: TaskQuery, row: Pick<TaskRow, 'serviceCode' | 'taskId' | 'status' | 'author' | 'sortAt' | 'state'>): boolean {
  if (filter.serviceCode && row.serviceCode !== filter.serviceCode) return false
  if (filter.status && filter.status.length > 0 && !filter.status.includes(row.status)) return false
  if (filter.keys && !filter.keys.some(([serviceCode, taskId]) => serviceCode === row.serviceCode && taskId === row.taskId)) return false
  if (filter.taskIds && !filter.taskIds.includes(row.taskId)) return false
  if (filter.userName && !(row.author !== null && foldCase(row.author).startsWith(foldCase(filter.userName)))) return false
  if (filter.owners && !filter.owners.some(([serviceCode, userName]) => serviceCode === row.serviceCode && userName === row.author)) return false
  if (filter.vsId && rowVsId(row) !== filter.vsId) return false
  if (filter.startedFrom && row.sortAt < filter.startedFrom) return false
  if (filter.startedTo && !(row.sortAt < filter.startedTo)) return false
  if (filter.allowedServiceCodes !== undefined && !filter.allowedServiceCodes.includes(row.serviceCode)) return false
  return true
}

/** The task rows for these (service code, task id) pairs, in one statement; only those in scope when one is given. */
export function tasksByKeys(db: Db, keys: readonly TaskKeyPair[], allowedServiceCodes?: readonly string[]): Promise<TaskRow[]> {
  if (keys.length === 0) return Promise.resolve([])
  return db
    .select()
    .from(tasks)
    .where(taskConditions({ keys: keys.map((key) => [key.serviceCode, key.taskId] as const), allowedServiceCodes }))
}

function keysetAfter(after: TaskKey | undefined): SQL | undefined {
  return after ? sql`(${tasks.sortAt}, ${tasks.id}) < (${new Date(after.sortAt).toISOString()}::timestamptz, ${after.id})` : undefined
}

/** What a read of a page of tasks can be narrowed to, beyond the keys every read has. */
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
  /** The text of each part asked as JSON text (see task.json.ts), in the order asked: `json0`, `json1`, … */
  [part: `json${number}`]: string | null | undefined
}

/** Parts of each task to read as JSON text, and the node's keys no field reads as objects then. */
export interface TaskJsonRead {
  parts: readonly TaskJsonPart[]
  dropFromNode: readonly TaskJsonKind[]
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
export async function listTasks(db: Db, filter: TaskQuery, after: TaskKey | undefined, limit: number, columns: Iterable<TaskColumn>, json?: TaskJsonRead | undefined): Promise<TaskListRow[]> {
  const where = and(taskConditions(filter), keysetAfter(after)) ?? sql`true`
  if (json && json.parts.length > 0) return listTasksWithJson(db, filter, where, limit, new Set(columns), json)
  const select = [KEY_COLUMNS, ...[...new Set(columns)].map((column) => COLUMN_SQL[column])].join(', ')
  const result = await db.execute(sql`select ${sql.raw(select)} from ${tasks} where ${where} order by ${tasks.sortAt} desc, ${tasks.id} desc limit ${limit}`)
  return resultRows<TaskListRow>(result)
}

/**
 * The same page with parts of each task as JSON text. The page is picked first, and each node
 * read out of its TOAST once (`n`, a fresh value) rather than once per part that reads it; the
 * node handed to the objects leaves out the parts written as text, so they are not parsed twice.
 */
async function listTasksWithJson(db: Db, filter: TaskQuery, where: SQL, limit: number, columns: ReadonlySet<TaskColumn>, json: TaskJsonRead): Promise<TaskListRow[]> {
  const select: SQL[] = [KEY_COLUMNS, ...[...columns].filter((column) => column !== 'node').map((column) => COLUMN_SQL[column])].map((text) => sql.raw(text))
  if (columns.has('node')) {
    const dropped = json.dropFromNode.length > 0 ? ` - '{${[...new Set(json.dropFromNode)].join(',')}}'::text[]` : ''
    select.push(sql.raw(`n${dropped} as node, case when n is null then state end as state`))
  }
  json.parts.forEach((part, i) => {
    const text =
      part.kind !== 'notifications'
        ? sql.raw(taskJsonPartSql(part, 'n'))
        : part.perTask === null
          ? sql`null::text`
          : taskNotificationsJsonSql(part.fields, 't.task_id', part.perTask, filter.allowedServiceCodes)
    select.push(sql`(${text}) as ${sql.raw(`"json${i}"`)}`)
  })
  const body = sql`select ${sql.join(select, sql`, `)} from (select id, sort_at, task_id, service_code, status, end_reason, author, state, node || '{}'::jsonb as n from ${tasks} where ${where} order by ${tasks.sortAt} desc, ${tasks.id} desc limit `
  // Planning this statement (~20 kB of expressions) costs PostgreSQL about a fifth of running it,
  // and a prepared statement is planned anew each time while its custom plan looks cheaper than
  // the generic one: with the limit a parameter, the generic plan guesses a tenth of the table
  // for the page and writes every part for those rows. Written into the text (an integer, one
  // text per page size), the guess is the page, the generic plan wins, and it is planned once
  // per connection. A statement with no parameter at all is not prepared: the limit stays one
  // unless the notifications' `perTask` is there.
  const literal = Number.isSafeInteger(limit) && limit >= 0 && json.parts.some((part) => part.kind === 'notifications' && part.perTask !== null)
  const result = await db.execute(sql`${body}${literal ? sql.raw(String(limit)) : sql`${limit}`}) t order by sort_at desc, id desc`)
  return resultRows<TaskListRow>(result)
}

// The criteria the counts kept per (service code, status) can answer (task-count.statements.ts).
const COUNTED = new Set(['serviceCode', 'status', 'allowedServiceCodes'])

/** How many tasks match the filter: from the kept counts where they can tell, else counted. */
export async function countTasks(db: Db, filter: TaskQuery): Promise<number> {
  if (Object.entries(filter).every(([key, value]) => value === undefined || value === null || COUNTED.has(key))) return countTasksKept(db, filter)
  const [row] = await db.select({ n: count() }).from(tasks).where(taskConditions(filter))
  return row?.n ?? 0
}

/** A user's natural key. */
export interface UserKeyPair {
  serviceCode: string
  userName: string
}

/**
 * A page of each user's tasks (those they started), in one statement for any number of users:
 * a lateral subquery per user reads its newest tasks off `tasks_author_sort_idx` and stops at
 * `limit`. Keyed `serviceCode\u0000userName`; each list is newest start first.
 */
export async function tasksOfUsers(db: Db, owners: readonly UserKeyPair[], filter: TaskQuery, after: TaskKey | undefined, limit: number): Promise<Map<string, TaskRow[]>> {
  const byOwner = new Map<string, TaskRow[]>(owners.map((owner) => [userKey(owner), []]))
  if (owners.length === 0 || limit <= 0) return byOwner
  const wanted = sql`jsonb_to_recordset(${userKeyList(owners)}) as wanted(service_code text, user_name text)`
  const page = db
    .select()
    .from(tasks)
    .where(and(sql`${tasks.serviceCode} = wanted.service_code and ${tasks.author} = wanted.user_name`, taskConditions(filter), keysetAfter(after)))
    .orderBy(desc(tasks.sortAt), desc(tasks.id))
    .limit(limit)
    .as('page')
  const columns = Object.fromEntries(Object.keys(getTableColumns(tasks)).map((key) => [key, page[key as keyof typeof page]])) as unknown as Record<string, SQL.Aliased>
  const rows = (await db.select(columns).from(wanted).crossJoinLateral(page).orderBy(desc(page.sortAt), desc(page.id))) as unknown as TaskRow[]
  for (const task of rows) {
    if (task.author !== null) byOwner.get(userKey({ serviceCode: task.serviceCode, userName: task.author }))?.push(task)
  }
  return byOwner
}

/** How many tasks of each user match the filter, in one statement. Keyed like {@link tasksOfUsers}. */
export async function countTasksOfUsers(db: Db, owners: readonly UserKeyPair[], filter: TaskQuery): Promise<Map<string, number>> {
  const counts = new Map<string, number>(owners.map((owner) => [userKey(owner), 0]))
  if (owners.length === 0) return counts
  const rows = await db
    .select({ serviceCode: tasks.serviceCode, author: tasks.author, n: count() })
    .from(tasks)
    .where(
      and(
        sql`(${tasks.serviceCode}, ${tasks.author}) in (select service_code, user_name from jsonb_to_recordset(${userKeyList(owners)}) as wanted(service_code text, user_name text))`,
        taskConditions(filter),
      ),
    )
    .groupBy(tasks.serviceCode, tasks.author)
  for (const row of rows) if (row.author !== null) counts.set(userKey({ serviceCode: row.serviceCode, userName: row.author }), row.n)
  return counts
}

/** The map key of a user in {@link tasksOfUsers} and {@link countTasksOfUsers}. */
export function userKey(user: UserKeyPair): string {
  return `${user.serviceCode}\u0000${user.userName}`
}

/** One service code's task counts, as `taskCounts` answers them. */
export interface TaskCountsRow {
  serviceCode: string
  live: number
  waitingReconnect: number
  ended: number
  total: number
  viewers: number
  outputBytes: number
}

// The task list's outputs of a task it lists now; a task it no longer lists has no viewers.
const listedOutputs = sql`jsonb_array_elements(case when ${tasks.listed} then coalesce(${tasks.state}->'sighting'->'task'->'value'->'outputs', '[]'::jsonb) else '[]'::jsonb end)`

/** Counts of the tasks that match, per service code, in one statement; codes with none are left out. */
export async function taskCountsByServiceCode(db: Db, filter: TaskQuery): Promise<TaskCountsRow[]> {
  const rows = await db
    .select({
      serviceCode: tasks.serviceCode,
      live: sql<string>`count(*) filter (where ${tasks.status} = 'LIVE')`,
      waitingReconnect: sql<string>`count(*) filter (where ${tasks.status} = 'WAITING_RECONNECT')`,
      ended: sql<string>`count(*) filter (where ${tasks.status} = 'ENDED')`,
      total: count(),
      viewers: sql<string>`coalesce(sum((select sum((o->>'http_connections_num')::bigint) from ${listedOutputs} as o)), 0)`,
      outputBytes: sql<string>`coalesce(sum((select sum((o->>'http_output_bytes')::bigint) from ${listedOutputs} as o)), 0)`,
    })
    .from(tasks)
    .where(taskConditions(filter))
    .groupBy(tasks.serviceCode)
    .orderBy(tasks.serviceCode)
  return rows.map((row) => ({
    serviceCode: row.serviceCode,
    live: Number(row.live),
    waitingReconnect: Number(row.waitingReconnect),
    ended: Number(row.ended),
    total: Number(row.total),
    viewers: Number(row.viewers),
    outputBytes: Number(row.outputBytes),
  }))
}
