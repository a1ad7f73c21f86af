import { isDeepStrictEqual } from 'node:util'
import { type AnyColumn, and, eq, type SQL, sql } from 'drizzle-orm'
import type { CallbackEvent } from '../fold/fold.event.js'
import { deriveTask, taskSortTime } from '../fold/task.derive.js'
import { applyTaskCallback, applyTaskSighting, emptyTaskState, type TaskState } from '../fold/task.fold.js'
import { applyUserCallback, applyUserSighting, emptyUserState, isOnline, type UserState } from '../fold/user.fold.js'
import type { TaskListAnswer } from '../model/task-list.schema.js'
import type { Db } from './database.client.js'
import { tasks, users } from './graph.table.js'
import { jsonLiteral, takeIncoming, upsertJson } from './json.rows.js'
import { storedTaskNode } from './task.node.js'

/** The tasks and users a write changed, as their new states. */
export interface GraphChanges {
  tasks: TaskState[]
  users: UserState[]
}

/** The tasks and users some callbacks of one service touch, and their stored states. */
export interface FoldScope {
  serviceCode: string
  taskIds: string[]
  userNames: string[]
}

/** The stored states of a scope's entities, read under their locks. */
export interface ScopeStates {
  tasks: Map<string, TaskState>
  users: Map<string, UserState>
}

/** The scope of some events of one service. */
export function foldScope(serviceCode: string, events: CallbackEvent[]): FoldScope {
  return { serviceCode, taskIds: unique(events.map((e) => e.callback.taskId)), userNames: unique(events.map((e) => e.callback.userName)) }
}

/**
 * One statement that takes the advisory locks of the scopes' entities, after a `lead` lock when
 * one is given. Writers that fold must hold them (two writers, say two gateway instances or the
 * poller and the callback route, would otherwise fold from the same old state and lose an event).
 */
export function lockStatement(scopes: FoldScope[], lead?: number): SQL | undefined {
  const keys = scopes.flatMap(entityKeys)
  if (keys.length === 0 && lead === undefined) return undefined
  // Taken in one sorted order (the lead first), so two writers locking overlapping sets cannot
  // deadlock; PostgreSQL evaluates a volatile select list after the sort.
  const leading = lead === undefined ? sql.raw('') : sql.raw(`select 0 as o, ${Math.trunc(lead)}::bigint as k, '' as s union all `)
  return sql`select pg_advisory_xact_lock(k) from (
      ${leading}select 1, hashtextextended(x, 0), x from jsonb_array_elements_text(${jsonLiteral(keys)}) as x
    ) as v(o, k, s) order by o, s`
}

/** Reads the stored states of a scope; its locks must be held. */
export async function readScope(tx: Db, scope: FoldScope): Promise<ScopeStates> {
  const [taskStates, userStates] = await Promise.all([readTaskStates(tx, scope.serviceCode, scope.taskIds), readUserStates(tx, scope.serviceCode, scope.userNames)])
  return { tasks: taskStates, users: userStates }
}

/** The entities of a scope that some events change, as their new states; writes nothing. */
export function foldEvents(scope: FoldScope, states: ScopeStates, events: CallbackEvent[]): GraphChanges {
  // Each entity folds only its own events: a batch of hundreds stays linear.
  const byTask = groupBy(events, (e) => e.callback.taskId)
  const byUser = groupBy(events, (e) => e.callback.userName)
  const { serviceCode } = scope
  const nextTasks = [...byTask].map(([id, own]) => own.reduce(applyTaskCallback, states.tasks.get(id) ?? emptyTaskState(serviceCode, id)))
  const nextUsers = [...byUser].map(([name, own]) => own.reduce(applyUserCallback, states.users.get(name) ?? emptyUserState(serviceCode, name)))
  return changedOnly(states.tasks, nextTasks, states.users, nextUsers)
}

/**
 * Applies one successful task_list answer: the tasks and users it lists are seen now; those the
 * previous answer listed and this one does not are absent now (that is how a vanished task is
 * noticed).
 */
export async function applyTaskListAnswer(tx: Db, serviceCode: string, answer: TaskListAnswer, takenAt: Date): Promise<GraphChanges> {
  const at = takenAt.getTime()
  const listedTasks = new Map(answer.task_list.map((task) => [task.id, task]))
  const listedUsers = new Map(answer.user_list.map((user) => [user.user_name, user]))
  const [wasListed, wasOnline] = await Promise.all([
    tx.select({ id: tasks.taskId }).from(tasks).where(and(eq(tasks.serviceCode, serviceCode), eq(tasks.listed, true))),
    tx.select({ name: users.userName }).from(users).where(and(eq(users.serviceCode, serviceCode), eq(users.online, true))),
  ])
  const taskIds = unique([...listedTasks.keys(), ...wasListed.map((row) => row.id)])
  const userNames = unique([...listedUsers.keys(), ...wasOnline.map((row) => row.name)])
  if (taskIds.length === 0 && userNames.length === 0) return { tasks: [], users: [] }
  await lockEntities(tx, serviceCode, taskIds, userNames)
  const [taskStates, userStates] = await Promise.all([readTaskStates(tx, serviceCode, taskIds), readUserStates(tx, serviceCode, userNames)])
  const nextTasks = taskIds.map((taskId) =>
    applyTaskSighting(taskStates.get(taskId) ?? emptyTaskState(serviceCode, taskId), { source: 'sighting', serviceCode, taskId, takenAt: at, task: listedTasks.get(taskId) ?? null }),
  )
  const nextUsers = userNames.map((userName) =>
    applyUserSighting(userStates.get(userName) ?? emptyUserState(serviceCode, userName), { source: 'sighting', serviceCode, userName, takenAt: at, user: listedUsers.get(userName) ?? null }),
  )
  const changes = changedOnly(taskStates, nextTasks, userStates, nextUsers)
  await writeChanges(tx, changes, takenAt)
  return changes
}

async function lockEntities(tx: Db, serviceCode: string, taskIds: string[], userNames: string[]): Promise<void> {
  const statement = lockStatement([{ serviceCode, taskIds, userNames }])
  if (statement) await tx.execute(statement)
}

function entityKeys(scope: FoldScope): string[] {
  return [...scope.taskIds.map((id) => `t:${scope.serviceCode}:${id}`), ...scope.userNames.map((name) => `u:${scope.serviceCode}:${name}`)]
}

async function readTaskStates(tx: Db, serviceCode: string, taskIds: string[]): Promise<Map<string, TaskState>> {
  if (taskIds.length === 0) return new Map()
  const rows = await tx.select({ state: tasks.state }).from(tasks).where(and(eq(tasks.serviceCode, serviceCode), inJsonArray(tasks.taskId, taskIds)))
  return new Map(rows.map(({ state }) => [state.taskId, state]))
}

async function readUserStates(tx: Db, serviceCode: string, userNames: string[]): Promise<Map<string, UserState>> {
  if (userNames.length === 0) return new Map()
  const rows = await tx.select({ state: users.state }).from(users).where(and(eq(users.serviceCode, serviceCode), inJsonArray(users.userName, userNames)))
  return new Map(rows.map(({ state }) => [state.userName, state]))
}

function changedOnly(taskStates: Map<string, TaskState>, nextTasks: TaskState[], userStates: Map<string, UserState>, nextUsers: UserState[]): GraphChanges {
  return {
    tasks: nextTasks.filter((state) => !isDeepStrictEqual(state, taskStates.get(state.taskId))),
    users: nextUsers.filter((state) => !isDeepStrictEqual(state, userStates.get(state.userName))),
  }
}

const TASK_SET = takeIncoming(['state', 'node', 'status', 'end_reason', 'author', 'listed', 'sort_at', 'updated_at'])
const USER_SET = takeIncoming(['state', 'online', 'last_seen_at', 'updated_at'])

/** Upserts the changed tasks and users (both statements sent at once, pipelined). */
export async function writeChanges(tx: Db, changes: GraphChanges, now: Date): Promise<void> {
  const writes: Array<Promise<unknown>> = []
  if (changes.tasks.length > 0) {
    const rows = changes.tasks.map((state) => taskRow(state, now))
    writes.push(tx.execute(upsertJson(tasks, rows, { target: [tasks.serviceCode.name, tasks.taskId.name], set: TASK_SET })))
  }
  if (changes.users.length > 0) {
    const rows = changes.users.map((state) => userRow(state, now))
    writes.push(tx.execute(upsertJson(users, rows, { target: [users.serviceCode.name, users.userName.name], set: USER_SET })))
  }
  await Promise.all(writes)
}

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
  return { serviceCode: state.serviceCode, userName: state.userName, state, online: isOnline(state), lastSeenAt: lastSeen === null ? null : new Date(lastSeen), updatedAt: now }
}

// `column in (…)` with the values in one literal rather than a placeholder each.
function inJsonArray(column: AnyColumn, values: string[]): SQL {
  return sql`${column} in (select jsonb_array_elements_text(${jsonLiteral(values)}))`
}

function unique(values: Array<string | undefined>): string[] {
  return [...new Set(values.filter((value): value is string => typeof value === 'string' && value !== ''))]
}

function groupBy<T>(items: T[], key: (item: T) => string | undefined): Map<string, T[]> {
  const groups = new Map<string, T[]>()
  for (const item of items) {
    const k = key(item)
    if (k === undefined) continue
    const group = groups.get(k)
    if (group) group.push(item)
    else groups.set(k, [item])
  }
  return groups
}
