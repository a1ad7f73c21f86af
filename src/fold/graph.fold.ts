import { isDeepStrictEqual } from 'node:util'
import type { TaskListAnswer } from '../model/task-list.schema.js'
import type { CallbackEvent } from './fold.event.js'
import { applyTaskCallback, applyTaskSighting, applyTaskStop, emptyTaskState, type TaskState } from './task.fold.js'
import { applyUserCallback, applyUserSighting, emptyUserState, type UserState } from './user.fold.js'

/** The tasks and users a fold changed, as their new states. */
export interface GraphChanges {
  tasks: TaskState[]
  users: UserState[]
}

/** The entities of one service code some evidence is about. */
export interface GraphScope {
  taskIds: string[]
  userNames: string[]
}

/** The stored states of a scope's entities (absent ones are not known yet). */
export interface GraphStates {
  tasks: Map<string, TaskState>
  users: Map<string, UserState>
}

/** The tasks and users some callbacks (of one service code) are about. */
export function callbackScope(events: readonly CallbackEvent[]): GraphScope {
  return {
    taskIds: unique(events.map((e) => e.callback.taskId)),
    userNames: unique(events.map((e) => e.callback.userName)),
  }
}

/**
 * Folds callbacks of one service code into their entities' states; only the entities whose state
 * changed are returned. Each entity folds only its own events, so a batch of thousands stays linear.
 */
export function foldCallbacks(
  serviceCode: string,
  states: GraphStates,
  events: readonly CallbackEvent[],
): GraphChanges {
  const byTask = groupBy(events, (e) => e.callback.taskId)
  const byUser = groupBy(events, (e) => e.callback.userName)
  const nextTasks = [...byTask].map(([id, own]) =>
    own.reduce(applyTaskCallback, states.tasks.get(id) ?? emptyTaskState(serviceCode, id)),
  )
  const nextUsers = [...byUser].map(([name, own]) =>
    own.reduce(applyUserCallback, states.users.get(name) ?? emptyUserState(serviceCode, name)),
  )
  return changedOnly(states, nextTasks, nextUsers)
}

/**
 * The entities a task_list answer is about: those it lists, and those the previous answer listed
 * (absent now: that is how a vanished task is noticed).
 */
export function sightingScope(answer: TaskListAnswer, listedBefore: GraphScope): GraphScope {
  return {
    taskIds: unique([...answer.task_list.map((task) => task.id), ...listedBefore.taskIds]),
    userNames: unique([...answer.user_list.map((user) => user.user_name), ...listedBefore.userNames]),
  }
}

/** Folds one successful task_list answer, taken at `takenAt`, into the states of its scope. */
export function foldSightings(
  serviceCode: string,
  states: GraphStates,
  scope: GraphScope,
  answer: TaskListAnswer,
  takenAt: number,
): GraphChanges {
  const listedTasks = new Map(answer.task_list.map((task) => [task.id, task]))
  const listedUsers = new Map(answer.user_list.map((user) => [user.user_name, user]))
  const nextTasks = scope.taskIds.map((taskId) =>
    applyTaskSighting(states.tasks.get(taskId) ?? emptyTaskState(serviceCode, taskId), {
      source: 'sighting',
      serviceCode,
      taskId,
      takenAt,
      task: listedTasks.get(taskId) ?? null,
    }),
  )
  const nextUsers = scope.userNames.map((userName) =>
    applyUserSighting(states.users.get(userName) ?? emptyUserState(serviceCode, userName), {
      source: 'sighting',
      serviceCode,
      userName,
      takenAt,
      user: listedUsers.get(userName) ?? null,
    }),
  )
  return changedOnly(states, nextTasks, nextUsers)
}

/** Folds a stop the cloud accepted into its task's state (a task not known yet is made known). */
export function foldStop(serviceCode: string, states: GraphStates, taskId: string, requestedAt: number): GraphChanges {
  const next = applyTaskStop(states.tasks.get(taskId) ?? emptyTaskState(serviceCode, taskId), requestedAt)
  return changedOnly(states, [next], [])
}

function changedOnly(states: GraphStates, nextTasks: TaskState[], nextUsers: UserState[]): GraphChanges {
  return {
    tasks: nextTasks.filter((state) => !isDeepStrictEqual(state, states.tasks.get(state.taskId))),
    users: nextUsers.filter((state) => !isDeepStrictEqual(state, states.users.get(state.userName))),
  }
}

function unique(values: ReadonlyArray<string | undefined>): string[] {
  return [...new Set(values.filter((value): value is string => typeof value === 'string' && value !== ''))]
}

function groupBy<T>(items: readonly T[], key: (item: T) => string | undefined): Map<string, T[]> {
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
