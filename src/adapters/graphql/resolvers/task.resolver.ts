import type { NotificationRow } from '../../../storage/notification.queries.js'
import { notificationList } from '../reads/notification.list.js'
import type { GraphQLResolveInfo } from 'graphql'
import {
  countTasks,
  listTasks,
  type TaskColumn,
  type TaskJsonRead,
  type TaskKey,
  type TaskQuery,
  taskCountsByServiceCode,
  type TaskCountsRow,
} from '../../../storage/graph/task.queries.js'
import { jsonReadOf } from '../reads/json.parts.js'
import type { Db } from '../../../storage/database.client.js'
import type { UserNode } from '../../../fold/graph.model.js'
import { deriveTask } from '../../../fold/task.derive.js'
import { deriveUser } from '../../../fold/user.fold.js'
import { allowedCodes, allowedUser, type Scope } from '../auth.scope.js'
import type { GraphqlContext } from '../reads/request.context.js'
import { requireGlobalId } from '../global.id.js'
import { badUserInput } from '../graphql.errors.js'
import { type OutputValue, outputViews, taskGlobalId } from '../reads/node.view.js'
import { type NotificationNode, notificationCursor, notificationNode } from '../reads/notification.view.js'
import {
  type ConnectionData,
  PAGE_ARGUMENTS,
  type PageWindow,
  pageWindow,
  taskCursor,
  toConnection,
} from '../connection.pagination.js'
import { asksForPageInfo, taskColumnsOf, taskNodeOf } from '../reads/task.selection.js'
import { Arg, Ctx, FieldResolver, ID, Info, Int, Query, Resolver, Root } from '../type-graphql.shim.js'
import { NotificationFilter } from '../types/notification-filter.input.js'
import { NotificationConnection } from '../types/notification.type.js'
import { Output } from '../types/output.type.js'
import { MAX_FILTER_IDS, Task, TaskConnection, TaskCounts, TaskFilter } from '../types/task.type.js'
import { User } from '../types/user.type.js'
import type { TaskView } from '../../../storage/tables/task.node.js'
import { notificationCriteria } from './notification.resolver.js'

const { first: FIRST, after: AFTER } = PAGE_ARGUMENTS

/**
 * A page of tasks as a connection; the rows also prime the task loader. The benchmark's ceiling
 * serves its page through this too, so both issue the very same statements.
 */
export async function taskConnection(
  db: Db,
  query: TaskQuery,
  window: PageWindow<TaskKey>,
  columns: Iterable<TaskColumn>,
  json?: TaskJsonRead | undefined,
): Promise<ConnectionData<TaskView>> {
  const rows = await listTasks(db, query, window.after, window.fetch, columns, json)
  return toConnection(rows, window, {
    codec: taskCursor,
    keyOf: (row) => ({ sortAt: row.sortAtMs, id: row.id }),
    toNode: (row) => taskNodeOf(row, json),
    countAll: () => countTasks(db, query),
  })
}

@Resolver(() => Task)
export class TaskResolver {
  @Query(() => TaskConnection, {
    description: 'Tasks, newest start first, folded from the task list and the stored notifications.',
  })
  async tasks(
    @Arg('filter', () => TaskFilter, {
      nullable: true,
      description: 'Which tasks; all the caller may read when absent.',
    })
    filter: TaskFilter | null | undefined,
    @Arg('first', () => Int, { nullable: true, description: FIRST }) first: number | null | undefined,
    @Arg('after', () => String, { nullable: true, description: AFTER }) after: string | null | undefined,
    @Ctx() { db, config, upstream, scope }: GraphqlContext,
    @Info() info: GraphQLResolveInfo,
  ): Promise<ConnectionData<TaskView>> {
    const query = taskQuery(filter, scope)
    const window = pageWindow({ first, after }, config.graphql, taskCursor)
    upstream.read(query.serviceCode ? [query.serviceCode] : undefined)
    // The parts the document asks as JSON text, when it was rewritten for them (json.rewrite.ts).
    return taskConnection(db, query, window, taskColumnsOf(info), jsonReadOf(info, config.graphql))
  }

  @Query(() => Task, {
    nullable: true,
    description: 'One task by its global id (`Task.id`); null when there is none the caller may read.',
  })
  async task(
    @Arg('id', () => ID, { description: "The task's global id." }) id: string,
    @Ctx() { loaders, upstream }: GraphqlContext,
  ): Promise<TaskView | null> {
    const [serviceCode = '', taskId = ''] = requireGlobalId(id, 'id', ['Task']).key
    upstream.read([serviceCode])
    const row = await loaders.task.load({ serviceCode, taskId })
    return row ? deriveTask(row.state) : null
  }

  @Query(() => [TaskCounts], {
    description:
      "A dashboard's counts in one round trip: the matching tasks of each service code by status, with viewers " +
      'and output bytes from the task list. Codes with no matching task are left out; in service code order.',
  })
  async taskCounts(
    @Arg('filter', () => TaskFilter, {
      nullable: true,
      description: 'Which tasks to count, as for `tasks`; all the caller may read when absent.',
    })
    filter: TaskFilter | null | undefined,
    @Ctx() { db, upstream, scope }: GraphqlContext,
  ): Promise<TaskCountsRow[]> {
    const query = taskQuery(filter, scope)
    upstream.read(query.serviceCode ? [query.serviceCode] : undefined)
    return taskCountsByServiceCode(db, query)
  }

  @FieldResolver(() => ID, {
    description:
      'An opaque global id (of the service code and `hashed_id`): the same across restarts and on every ' +
      'instance; pass it to `node(id:)` or `task(id:)`.',
  })
  id(@Root() task: TaskView): string {
    return taskGlobalId(task)
  }

  @FieldResolver(() => String, {
    description: "The task's `hashed_id` (the task list's `id`), as the service names it.",
  })
  taskId(@Root() task: TaskView): string {
    return task.id
  }

  @FieldResolver(() => User, {
    nullable: true,
    description: 'The user who started the live; null when no notification or task list names one.',
  })
  async user(@Root() task: TaskView, @Ctx() { loaders }: GraphqlContext): Promise<UserNode | null> {
    if (task.author === null) return null
    const row = await loaders.user.load({ serviceCode: task.serviceCode, userName: task.author })
    return row ? deriveUser(row.state) : null
  }

  @FieldResolver(() => [Output], {
    description:
      'Its output formats, joined from the task list and the type 0, 1 and 2 notifications; by output index.',
  })
  outputs(@Root() task: TaskView): OutputValue[] {
    return outputViews(task)
  }

  @FieldResolver(() => NotificationConnection, {
    description: 'The stored notifications about this task, newest first.',
  })
  async notifications(
    @Root() task: TaskView,
    @Arg('filter', () => NotificationFilter, {
      nullable: true,
      description: 'Which of its notifications; all when absent.',
    })
    filter: NotificationFilter | null | undefined,
    @Arg('first', () => Int, { nullable: true, description: FIRST }) first: number | null | undefined,
    @Arg('after', () => String, { nullable: true, description: AFTER }) after: string | null | undefined,
    @Ctx() { db, config, loaders, scope }: GraphqlContext,
    @Info() info: GraphQLResolveInfo,
  ): Promise<ConnectionData<NotificationNode>> {
    const window = pageWindow({ first, after }, config.graphql, notificationCursor)
    const parts = { codec: notificationCursor, keyOf: (row: NotificationRow) => row, toNode: notificationNode }
    if (!filter && window.after === undefined) {
      // The common case (a page of tasks, each with its latest few): batched across the page.
      const rows = await loaders.notificationsOfTask(asksForPageInfo(info) ? window.fetch : window.size).load(task.id)
      return toConnection(rows, window, { ...parts, countAll: () => loaders.notificationCountOfTask.load(task.id) })
    }
    const criteria = { ...notificationCriteria(filter, scope), taskId: task.id }
    const { rows, countAll } = await notificationList(db, criteria, { before: window.after, limit: window.fetch })
    return toConnection(rows, window, { ...parts, countAll })
  }
}

/** The `TaskFilter` argument as store criteria; text no stored row can match is refused. */
export function taskQuery(filter: TaskFilter | null | undefined, scope: Scope): TaskQuery {
  const allowedServiceCodes = allowedCodes(scope)
  const allowedUserName = allowedUser(scope)
  if (!filter) return { allowedServiceCodes, allowedUserName }
  for (const [name, list] of [
    ['ids', filter.ids],
    ['taskIds', filter.taskIds],
    ['userIds', filter.userIds],
  ] as const) {
    if (list && list.length > MAX_FILTER_IDS)
      throw badUserInput(`filter.${name} may list at most ${MAX_FILTER_IDS} ids.`, 'filter')
  }
  if (filter.taskIds?.some((id) => id.includes('\u0000')))
    throw badUserInput('filter.taskIds may not contain a NUL character.', 'filter')
  const pairs = (ids: string[] | null | undefined, name: string, type: 'Task' | 'User') =>
    ids?.map(
      (id) => requireGlobalId(id, 'filter', [type], `filter.${name}`).key as unknown as readonly [string, string],
    )
  return {
    serviceCode: filter.serviceCode,
    status: filter.status,
    // An id of another tenant's task or user stays in the filter and matches nothing: the scope holds.
    keys: pairs(filter.ids, 'ids', 'Task'),
    owners: pairs(filter.userIds, 'userIds', 'User'),
    taskIds: filter.taskIds ? [...new Set(filter.taskIds)] : filter.taskIds,
    userName: filter.userName,
    vsId: filter.vsId,
    startedFrom: filter.startedFrom,
    startedTo: filter.startedTo,
    allowedServiceCodes,
    allowedUserName,
  }
}
