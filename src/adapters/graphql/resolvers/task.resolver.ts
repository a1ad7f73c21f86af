import { countNotifications, type NotificationRow, notificationPage } from '../../../storage/notification.queries.js'
import type { GraphQLResolveInfo } from 'graphql'
import { countTasks, listTasks, type TaskColumn, type TaskKey, type TaskQuery } from '../../../storage/task.queries.js'
import type { TaskNode } from '../../../fold/graph.model.js'
import { deriveTask } from '../../../fold/task.derive.js'
import { allowedCodes, type Scope } from '../auth.scope.js'
import type { GraphqlContext } from '../context.js'
import { refuseNul } from '../graphql.errors.js'
import { type NotificationNode, notificationCursor, notificationNode } from '../notification.view.js'
import { type ConnectionData, type PageWindow, pageWindow, taskCursor, toConnection } from '../pagination.js'
import { asksForPageInfo, taskColumnsOf, taskNodeOf } from '../task.selection.js'
import type { Db } from '../../../storage/database.client.js'
import { Arg, Ctx, FieldResolver, ID, Info, Int, Query, Resolver, Root } from '../type-graphql.shim.js'
import { NotificationFilter } from '../types/notification-filter.input.js'
import { NotificationConnection } from '../types/notification.type.js'
import { Task, TaskConnection, TaskFilter } from '../types/task.type.js'
import { notificationCriteria } from './notification.resolver.js'

/** A page of tasks as a connection, reading only the `columns` its selection needs. */
export async function taskConnection(db: Db, query: TaskQuery, window: PageWindow<TaskKey>, columns: Iterable<TaskColumn>): Promise<ConnectionData<TaskNode>> {
  const rows = await listTasks(db, query, window.after, window.fetch, columns)
  return toConnection(rows, window, {
    codec: taskCursor,
    keyOf: (row) => ({ sortAt: row.sortAtMs, id: row.id }),
    toNode: taskNodeOf,
    countAll: () => countTasks(db, query),
  })
}

@Resolver(() => Task)
export class TaskResolver {
  @Query(() => TaskConnection, { description: 'Tasks, newest start first, folded from the task list and the stored notifications.' })
  async tasks(
    @Arg('filter', () => TaskFilter, { nullable: true }) filter: TaskFilter | null | undefined,
    @Arg('first', () => Int, { nullable: true }) first: number | null | undefined,
    @Arg('after', () => String, { nullable: true }) after: string | null | undefined,
    @Ctx() { db, config, upstream, scope }: GraphqlContext,
    @Info() info: GraphQLResolveInfo,
  ): Promise<ConnectionData<TaskNode>> {
    const query = taskQuery(filter, scope)
    const window = pageWindow({ first, after }, config.graphql, taskCursor)
    upstream.read(query.serviceCode ? [query.serviceCode] : undefined)
    return taskConnection(db, query, window, taskColumnsOf(info))
  }

  @Query(() => Task, { nullable: true, description: 'One task by its `hashed_id`.' })
  async task(@Arg('id', () => ID) id: string, @Ctx() { loaders, upstream }: GraphqlContext): Promise<TaskNode | null> {
    refuseNul({ id }, 'id')
    const row = await loaders.task.load(id)
    if (row) upstream.read([row.serviceCode])
    return row ? deriveTask(row.state) : null
  }

  @FieldResolver(() => NotificationConnection, { description: 'The stored notifications about this task, newest first.' })
  async notifications(
    @Root() task: TaskNode,
    @Arg('filter', () => NotificationFilter, { nullable: true }) filter: NotificationFilter | null | undefined,
    @Arg('first', () => Int, { nullable: true }) first: number | null | undefined,
    @Arg('after', () => String, { nullable: true }) after: string | null | undefined,
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
    const rows = await notificationPage(db, criteria, { before: window.after, limit: window.fetch })
    return toConnection(rows, window, { ...parts, countAll: () => countNotifications(db, criteria) })
  }
}

/** The `TaskFilter` argument as store criteria; text no stored row can match is refused. */
export function taskQuery(filter: TaskFilter | null | undefined, scope: Scope): TaskQuery {
  const allowedServiceCodes = allowedCodes(scope)
  if (!filter) return { allowedServiceCodes }
  refuseNul({ serviceCode: filter.serviceCode, author: filter.author }, 'filter')
  return {
    serviceCode: filter.serviceCode,
    status: filter.status,
    author: filter.author,
    startedFrom: filter.startedFrom,
    startedTo: filter.startedTo,
    allowedServiceCodes,
  }
}
