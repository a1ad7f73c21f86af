import { type AnyColumn, and, eq, type SQL, sql } from 'drizzle-orm'
import type { GraphChanges, GraphScope, GraphStates } from '../../fold/graph.fold.js'
import { deriveTask, taskSortTime } from '../../fold/task.derive.js'
import type { TaskState } from '../../fold/task.fold.js'
import { isOnline, type UserState } from '../../fold/user.fold.js'
import type { Db } from '../database.client.js'
import { tasks, users } from '../tables/graph.table.js'
import { jsonParameter, takeIncoming, upsertJson } from '../tables/json.rows.js'
import { storedTaskNode } from '../tables/task.node.js'

/**
 * Takes the graph lock of each service code, in one sorted order (two writers locking
 * overlapping codes cannot deadlock), until the transaction ends. Every writer of task and user
 * states holds it: the projector, and the poller folding a task_list answer; two of them would
 * otherwise fold from the same old state and lose what the other wrote.
 */
export async function lockGraphOf(tx: Db, serviceCodes: readonly string[]): Promise<void> {
  if (serviceCodes.length === 0) return
  const keys = [...new Set(serviceCodes)].sort().map((code) => `graph:${code}`)
  // PostgreSQL evaluates a volatile select list after the sort.
  await tx.execute(
    sql`select pg_advisory_xact_lock(hashtextextended(k, 0)) from jsonb_array_elements_text(${jsonParameter(keys)}) as
      v(k) order by k`,
  )
}

/** The stored states of a scope of one service code; its graph lock must be held. */
export async function readGraphStates(tx: Db, serviceCode: string, scope: GraphScope): Promise<GraphStates> {
  const [taskStates, userStates] = await Promise.all([
    readTaskStates(tx, serviceCode, scope.taskIds),
    readUserStates(tx, serviceCode, scope.userNames),
  ])
  return { tasks: taskStates, users: userStates }
}

/** The tasks and users the latest task_list answer of a service code listed. */
export async function listedNow(tx: Db, serviceCode: string): Promise<GraphScope> {
  const [listedTasks, onlineUsers] = await Promise.all([
    tx
      .select({ id: tasks.taskId })
      .from(tasks)
      .where(and(eq(tasks.serviceCode, serviceCode), eq(tasks.listed, true))),
    tx
      .select({ name: users.userName })
      .from(users)
      .where(and(eq(users.serviceCode, serviceCode), eq(users.online, true))),
  ])
  return { taskIds: listedTasks.map((row) => row.id), userNames: onlineUsers.map((row) => row.name) }
}

async function readTaskStates(tx: Db, serviceCode: string, taskIds: string[]): Promise<Map<string, TaskState>> {
  if (taskIds.length === 0) return new Map()
  const rows = await tx
    .select({ state: tasks.state })
    .from(tasks)
    .where(and(eq(tasks.serviceCode, serviceCode), inJsonArray(tasks.taskId, taskIds)))
  return new Map(rows.map(({ state }) => [state.taskId, state]))
}

async function readUserStates(tx: Db, serviceCode: string, userNames: string[]): Promise<Map<string, UserState>> {
  if (userNames.length === 0) return new Map()
  const rows = await tx
    .select({ state: users.state })
    .from(users)
    .where(and(eq(users.serviceCode, serviceCode), inJsonArray(users.userName, userNames)))
  return new Map(rows.map(({ state }) => [state.userName, state]))
}

const TASK_SET = takeIncoming(['state', 'node', 'status', 'end_reason', 'author', 'listed', 'sort_at', 'updated_at'])
const USER_SET = takeIncoming(['state', 'online', 'last_seen_at', 'updated_at'])

/** Upserts the changed tasks and users (both statements sent at once, pipelined). */
export async function writeChanges(tx: Db, changes: GraphChanges, now: Date): Promise<void> {
  const writes: Array<Promise<unknown>> = []
  if (changes.tasks.length > 0) {
    const rows = changes.tasks.map((state) => taskRow(state, now))
    writes.push(
      tx.execute(upsertJson(tasks, rows, { target: [tasks.serviceCode.name, tasks.taskId.name], set: TASK_SET })),
    )
  }
  if (changes.users.length > 0) {
    const rows = changes.users.map((state) => userRow(state, now))
    writes.push(
      tx.execute(upsertJson(users, rows, { target: [users.serviceCode.name, users.userName.name], set: USER_SET })),
    )
  }
  await Promise.all(writes)
}

// The derived node is written beside the state, so a read never folds or derives again.
function taskRow(state: TaskState, now: Date) {
  const node = deriveTask(state)
  return {
    serviceCode: state.serviceCode,
    taskId: state.taskId,
    state,
    node: storedTaskNode(node),
    status: node.status,
    endReason: node.endReason,
    author: node.author,
    listed: node.listed,
    sortAt: new Date(taskSortTime(state)),
    updatedAt: now,
  }
}

function userRow(state: UserState, now: Date) {
  const lastSeen = state.lastSeenAt ?? state.firstSeenAt
  return {
    serviceCode: state.serviceCode,
    userName: state.userName,
    state,
    online: isOnline(state),
    lastSeenAt: lastSeen === null ? null : new Date(lastSeen),
    updatedAt: now,
  }
}

// `column in (…)` with the values in one jsonb parameter rather than a placeholder each: one
// statement text for any number of values, so it runs prepared.
function inJsonArray(column: AnyColumn, values: string[]): SQL {
  return sql`${column} in (select jsonb_array_elements_text(${jsonParameter(values)}))`
}
