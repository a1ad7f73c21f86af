import { and, count, type SQL, sql } from 'drizzle-orm'
import type { TaskState } from '../../fold/task.fold.js'
import { type Db, resultRows } from '../database.client.js'
import { ShapedStatements } from '../statement.cache.js'
import { type TaskRow, tasks } from '../tables/graph.table.js'
import type { StoredTaskNode } from '../tables/task.node.js'
import { ownedByValues } from '../tables/task.owner.js'
import { taskNotificationsJsonSql } from './notification.json.js'
import { countTasksKept } from './task-count.statements.js'
import { type TaskKey, type TaskQuery, taskConditions, taskFilterParams, taskFilterShape } from './task.filter.js'
import { type TaskJsonKind, type TaskJsonPart, taskJsonPartSql } from './task.json.js'

export { type TaskKey, type TaskQuery, taskMatches } from './task.filter.js'

/** A task's natural key: unique across service codes, and stable for its life. */
export interface TaskKeyPair {
  serviceCode: string
  taskId: string
}

/** The task rows for these (service code, task id) pairs, in one statement; only those in scope when one is given. */
export function tasksByKeys(
  db: Db,
  keys: readonly TaskKeyPair[],
  allowedServiceCodes?: readonly string[],
  allowedUserName?: string,
): Promise<TaskRow[]> {
  if (keys.length === 0) return Promise.resolve([])
  const pairs = keys.map((key) => [key.serviceCode, key.taskId] as const)
  return db
    .select()
    .from(tasks)
    .where(taskConditions({ keys: pairs, allowedServiceCodes, allowedUserName }))
}

// The texts of a page's and a count's statements, per filter shape (see statement.cache.ts).
const pageStatements = new ShapedStatements()
const countStatements = new ShapedStatements()

/** Shapes whose listed values disagreed with Drizzle's, across the task reads: zero, or a bug. */
export function taskStatementMismatches(): number {
  return pageStatements.mismatches + countStatements.mismatches
}

/** The keyset condition of a page after `after` (newest start first), or none. */
export function keysetAfter(after: TaskKey | undefined): SQL | undefined {
  return after
    ? sql`(${tasks.sortAt}, ${tasks.id}) < (${new Date(after.sortAt).toISOString()}::timestamptz, ${after.id})`
    : undefined
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
const KEY_COLUMNS =
  'id::float8 as "id", (extract(epoch from sort_at) * 1000)::float8 as "sortAtMs", task_id as "taskId", ' +
  'service_code as "serviceCode"'
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
export async function listTasks(
  db: Db,
  filter: TaskQuery,
  after: TaskKey | undefined,
  limit: number,
  columns: Iterable<TaskColumn>,
  json?: TaskJsonRead | undefined,
): Promise<TaskListRow[]> {
  if (json && json.parts.length > 0) return listTasksWithJson(db, filter, after, limit, new Set(columns), json)
  const asked = [...new Set(columns)]
  const shape = `${taskFilterShape(filter)}|${after ? 'a' : ''}|${asked.join(',')}`
  const result = await pageStatements.run(
    db,
    shape,
    () => {
      const where = and(taskConditions(filter), keysetAfter(after)) ?? sql`true`
      const select = [KEY_COLUMNS, ...asked.map((column) => COLUMN_SQL[column])].join(', ')
      return sql`select ${sql.raw(select)} from ${tasks} where ${where} order by ${tasks.sortAt} desc, ${tasks.id} desc
        limit ${limit}`
    },
    () => {
      const params = taskFilterParams(filter, [])
      if (after) params.push(new Date(after.sortAt).toISOString(), after.id)
      params.push(limit)
      return params
    },
  )
  return resultRows<TaskListRow>(result)
}

/**
 * The same page with parts of each task as JSON text. The page is picked first, and each node
 * read out of its TOAST once (`n`, a fresh value) rather than once per part that reads it; the
 * node handed to the objects leaves out the parts written as text, so they are not parsed twice.
 */
async function listTasksWithJson(
  db: Db,
  filter: TaskQuery,
  after: TaskKey | undefined,
  limit: number,
  columns: ReadonlySet<TaskColumn>,
  json: TaskJsonRead,
): Promise<TaskListRow[]> {
  // Planning this statement (~20 kB of expressions) costs PostgreSQL about a fifth of running it,
  // and a prepared statement is planned anew each time while its custom plan looks cheaper than
  // the generic one: with the limit a parameter, the generic plan guesses a tenth of the table
  // for the page and writes every part for those rows. Written into the text (an integer, one
  // text per page size), the guess is the page, the generic plan wins, and it is planned once
  // per connection. A statement with no parameter at all is not prepared: the limit stays one
  // unless the notifications' `perTask` is there.
  const literal =
    Number.isSafeInteger(limit) &&
    limit >= 0 &&
    json.parts.some((part) => part.kind === 'notifications' && part.perTask !== null)
  const dropped = columns.has('node') && json.dropFromNode.length > 0 ? [...new Set(json.dropFromNode)].join(',') : ''
  const shape = [
    taskFilterShape(filter),
    after ? 'a' : '',
    [...columns].join(','),
    dropped,
    json.parts.map(partShape).join(';'),
    literal ? limit : 'p',
  ].join('|')
  const build = () => {
    const where = and(taskConditions(filter), keysetAfter(after)) ?? sql`true`
    const select: SQL[] = [
      KEY_COLUMNS,
      ...[...columns].filter((column) => column !== 'node').map((column) => COLUMN_SQL[column]),
    ].map((text) => sql.raw(text))
    if (columns.has('node'))
      select.push(
        sql.raw(`n${dropped ? ` - '{${dropped}}'::text[]` : ''} as node, case when n is null then state end as state`),
      )
    json.parts.forEach((part, i) => {
      const text =
        part.kind !== 'notifications'
          ? sql.raw(taskJsonPartSql(part, 'n'))
          : part.perTask === null
            ? sql`null::text`
            : taskNotificationsJsonSql(
                part.fields,
                't.task_id',
                part.perTask,
                filter.allowedServiceCodes,
                filter.allowedUserName,
              )
      select.push(sql`(${text}) as ${sql.raw(`"json${i}"`)}`)
    })
    const body = sql`select ${sql.join(select, sql`, `)} from (select id, sort_at, task_id, service_code, status,
      end_reason, author, state, node || '{}'::jsonb as n from ${tasks} where ${where} order by ${tasks.sortAt} desc,
      ${tasks.id} desc limit `
    return sql`${body}${literal ? sql.raw(String(limit)) : sql`${limit}`}) t order by sort_at desc, id desc`
  }
  const params = () => {
    // In the text's order: the notifications' scope and count in the select list, then the filter, the keyset, the
    // limit.
    const values: unknown[] = []
    for (const part of json.parts) {
      if (part.kind !== 'notifications' || part.perTask === null) continue
      for (const field of part.fields)
        if (field.name === 'edges')
          values.push(
            ...(filter.allowedServiceCodes ?? []),
            ...(filter.allowedUserName === undefined ? [] : ownedByValues('callbacks', filter.allowedUserName)),
            part.perTask,
          )
    }
    taskFilterParams(filter, values)
    if (after) values.push(new Date(after.sortAt).toISOString(), after.id)
    if (!literal) values.push(limit)
    return values
  }
  return resultRows<TaskListRow>(await pageStatements.run(db, shape, build, params))
}

// A part's selection is the same objects on every request of a document (see task.json.ts): its
// identity names the text it is written as, and a number stands for it in the shape.
const selectionIds = new WeakMap<object, number>()
let selections = 0

function partShape(part: TaskJsonPart): string {
  let id = selectionIds.get(part.fields)
  if (id === undefined) {
    id = ++selections
    selectionIds.set(part.fields, id)
  }
  return `${part.kind}:${id}${part.kind === 'notifications' && part.perTask === null ? ':none' : ''}`
}

// The criteria the counts kept per (service code, status) can answer (task-count.statements.ts).
const COUNTED = new Set(['serviceCode', 'status', 'allowedServiceCodes'])

/** How many tasks match the filter: from the kept counts where they can tell, else counted. */
export async function countTasks(db: Db, filter: TaskQuery): Promise<number> {
  if (Object.entries(filter).every(([key, value]) => value === undefined || value === null || COUNTED.has(key)))
    return countTasksKept(db, filter)
  const result = await countStatements.run(
    db,
    taskFilterShape(filter),
    () => sql`select count(*)::float8 as n from ${tasks} where ${taskConditions(filter) ?? sql`true`}`,
    () => taskFilterParams(filter, []),
  )
  return resultRows<{ n: number }>(result)[0]?.n ?? 0
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
const listedOutputs = sql`jsonb_array_elements(case when ${tasks.listed} then
  coalesce(${tasks.state}->'sighting'->'task'->'value'->'outputs', '[]'::jsonb) else '[]'::jsonb end)`

/** Counts of the tasks that match, per service code, in one statement; codes with none are left out. */
export async function taskCountsByServiceCode(db: Db, filter: TaskQuery): Promise<TaskCountsRow[]> {
  const rows = await db
    .select({
      serviceCode: tasks.serviceCode,
      live: sql<string>`count(*) filter (where ${tasks.status} = 'LIVE')`,
      waitingReconnect: sql<string>`count(*) filter (where ${tasks.status} = 'WAITING_RECONNECT')`,
      ended: sql<string>`count(*) filter (where ${tasks.status} = 'ENDED')`,
      total: count(),
      viewers: sql<string>`coalesce(sum((select sum((o->>'http_connections_num')::bigint) from ${listedOutputs} as o)),
        0)`,
      outputBytes: sql<string>`coalesce(sum((select sum((o->>'http_output_bytes')::bigint) from ${listedOutputs} as
        o)), 0)`,
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
