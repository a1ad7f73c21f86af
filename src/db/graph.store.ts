import { isDeepStrictEqual } from 'node:util'
import { and, eq, inArray, sql } from 'drizzle-orm'
import type { CallbackEvent } from '../graph/fold.event.js'
import { deriveStatus, taskAuthor, taskSortTime } from '../graph/task.derive.js'
import { applyTaskCallback, applyTaskSighting, emptyTaskState, isListed, type TaskState } from '../graph/task.fold.js'
import { applyUserCallback, applyUserSighting, emptyUserState, isOnline, type UserState } from '../graph/user.fold.js'
import type { TaskListAnswer } from '../upstream/task-list.schema.js'
import type { Db } from './database.client.js'
import { tasks, users } from './graph.table.js'

/** The tasks and users a write changed, as their new states. */
export interface GraphChanges {
  tasks: TaskState[]
  users: UserState[]
}

/**
 * Applies fold events to the stored task and user states. Must run inside a transaction: it
 * takes an advisory lock per entity, so two writers (two gateway instances, or the poller and
 * the callback route) never fold from the same old state and lose each other's event.
 */
export async function applyCallbackEvents(tx: Db, serviceCode: string, events: CallbackEvent[], now: Date): Promise<GraphChanges> {
  const taskIds = unique(events.map((e) => e.callback.taskId))
  const userNames = unique(events.map((e) => e.callback.userName))
  if (taskIds.length === 0 && userNames.length === 0) return { tasks: [], users: [] }
  await lockEntities(tx, serviceCode, taskIds, userNames)
  const [taskStates, userStates] = await Promise.all([readTaskStates(tx, serviceCode, taskIds), readUserStates(tx, serviceCode, userNames)])
  const nextTasks = taskIds.map((id) => events.reduce(applyTaskCallback, taskStates.get(id) ?? emptyTaskState(serviceCode, id)))
  const nextUsers = userNames.map((name) => events.reduce(applyUserCallback, userStates.get(name) ?? emptyUserState(serviceCode, name)))
  return writeChanged(tx, taskStates, nextTasks, userStates, nextUsers, now)
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
  return writeChanged(tx, taskStates, nextTasks, userStates, nextUsers, takenAt)
}

async function lockEntities(tx: Db, serviceCode: string, taskIds: string[], userNames: string[]): Promise<void> {
  // Taken in one sorted order, so two writers locking overlapping sets cannot deadlock.
  const keys = [...taskIds.map((id) => `t:${serviceCode}:${id}`), ...userNames.map((name) => `u:${serviceCode}:${name}`)]
  const rows = sql.join(
    keys.map((key) => sql`(${key})`),
    sql`, `,
  )
  // PostgreSQL evaluates a volatile select list after the sort, so the locks are taken in order.
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(k, 0)) from (values ${rows}) as v(k) order by k`)
}

async function readTaskStates(tx: Db, serviceCode: string, taskIds: string[]): Promise<Map<string, TaskState>> {
  if (taskIds.length === 0) return new Map()
  const rows = await tx.select({ state: tasks.state }).from(tasks).where(and(eq(tasks.serviceCode, serviceCode), inArray(tasks.taskId, taskIds)))
  return new Map(rows.map(({ state }) => [state.taskId, state]))
}

async function readUserStates(tx: Db, serviceCode: string, userNames: string[]): Promise<Map<string, UserState>> {
  if (userNames.length === 0) return new Map()
  const rows = await tx.select({ state: users.state }).from(users).where(and(eq(users.serviceCode, serviceCode), inArray(users.userName, userNames)))
  return new Map(rows.map(({ state }) => [state.userName, state]))
}

async function writeChanged(
  tx: Db,
  taskStates: Map<string, TaskState>,
  nextTasks: TaskState[],
  userStates: Map<string, UserState>,
  nextUsers: UserState[],
  now: Date,
): Promise<GraphChanges> {
  const changedTasks = nextTasks.filter((state) => !isDeepStrictEqual(state, taskStates.get(state.taskId)))
  const changedUsers = nextUsers.filter((state) => !isDeepStrictEqual(state, userStates.get(state.userName)))
  if (changedTasks.length > 0) {
    await tx
      .insert(tasks)
      .values(changedTasks.map((state) => taskRow(state, now)))
      .onConflictDoUpdate({
        target: [tasks.serviceCode, tasks.taskId],
        set: {
          state: sql`excluded.state`,
          status: sql`excluded.status`,
          endReason: sql`excluded.end_reason`,
          author: sql`excluded.author`,
          listed: sql`excluded.listed`,
          sortAt: sql`excluded.sort_at`,
          updatedAt: sql`excluded.updated_at`,
        },
      })
  }
  if (changedUsers.length > 0) {
    await tx
      .insert(users)
      .values(changedUsers.map((state) => userRow(state, now)))
      .onConflictDoUpdate({
        target: [users.serviceCode, users.userName],
        set: { state: sql`excluded.state`, online: sql`excluded.online`, lastSeenAt: sql`excluded.last_seen_at`, updatedAt: sql`excluded.updated_at` },
      })
  }
  return { tasks: changedTasks, users: changedUsers }
}

function taskRow(state: TaskState, now: Date) {
  const { status, endReason } = deriveStatus(state)
  return {
    serviceCode: state.serviceCode,
    taskId: state.taskId,
    state,
    status,
    endReason,
    author: taskAuthor(state),
    listed: isListed(state),
    sortAt: new Date(taskSortTime(state)),
    updatedAt: now,
  }
}

function userRow(state: UserState, now: Date) {
  const lastSeen = state.lastSeenAt ?? state.firstSeenAt
  return { serviceCode: state.serviceCode, userName: state.userName, state, online: isOnline(state), lastSeenAt: lastSeen === null ? null : new Date(lastSeen), updatedAt: now }
}

function unique(values: Array<string | undefined>): string[] {
  return [...new Set(values.filter((value): value is string => typeof value === 'string' && value !== ''))]
}
