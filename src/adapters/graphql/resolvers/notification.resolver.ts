import type { NotificationCriteria } from '../../../storage/notification.queries.js'
import { notificationList } from '../reads/notification.list.js'
import { allowedCodes, allowedUser, type Scope } from '../auth.scope.js'
import type { GraphqlContext } from '../reads/request.context.js'
import { badUserInput } from '../graphql.errors.js'
import { type NotificationNode, notificationCursor, notificationNode } from '../reads/notification.view.js'
import { type ConnectionData, pageWindow, toConnection } from '../connection.pagination.js'
import { Arg, Ctx, FieldResolver, Int, Query, Resolver, Root } from '../type-graphql.shim.js'
// The kinds are reached only through the Notification interface; importing them registers them.
import '../types/notification-kinds.type.js'
import { NotificationFilter } from '../types/notification-filter.input.js'
import type { NotificationKind } from '../types/notification.enums.js'
import { Notification, NotificationConnection } from '../types/notification.type.js'
import { MAX_FILTER_IDS, Task } from '../types/task.type.js'
import { User } from '../types/user.type.js'
import { CALLBACK_KINDS } from '../../../model/callback.parse.js'
import { deriveTask } from '../../../fold/task.derive.js'
import { deriveUser } from '../../../fold/user.fold.js'
import type { TaskView } from '../../../storage/tables/task.node.js'
import type { UserNode } from '../../../fold/graph.model.js'

// More types than the service publishes, and far below the statement's parameter bound.
const MAX_TYPES = 100

// The published type of each kind, and every published type (what UNKNOWN excludes).
const TYPE_OF_KIND = new Map(Object.entries(CALLBACK_KINDS).map(([type, kind]) => [kind as string, Number(type)]))
const KNOWN_TYPES = [...TYPE_OF_KIND.values()]

@Resolver(() => Notification)
export class NotificationResolver {
  @Query(() => NotificationConnection, { description: 'Stored notification callbacks, newest first.' })
  async notifications(
    @Arg('filter', () => NotificationFilter, {
      nullable: true,
      description: 'Which notifications; all the caller may read when absent.',
    })
    filter: NotificationFilter | null | undefined,
    @Arg('first', () => Int, {
      nullable: true,
      description: 'How many to return; the server sets the default and the largest allowed.',
    })
    first: number | null | undefined,
    @Arg('after', () => String, {
      nullable: true,
      description: 'A cursor from an earlier page: return the notifications older than it.',
    })
    after: string | null | undefined,
    @Ctx() { db, config, scope }: GraphqlContext,
  ): Promise<ConnectionData<NotificationNode>> {
    const window = pageWindow({ first, after }, config.graphql, notificationCursor)
    const criteria = notificationCriteria(filter, scope)
    const { rows, countAll } = await notificationList(db, criteria, { before: window.after, limit: window.fetch })
    return toConnection(rows, window, {
      codec: notificationCursor,
      keyOf: (row) => row,
      toNode: (row) => notificationNode(row),
      countAll,
    })
  }

  @FieldResolver(() => Task, {
    nullable: true,
    description: 'The task it is about; null when the callback names none, or livegate has not folded it.',
  })
  async task(@Root() node: NotificationNode, @Ctx() { loaders }: GraphqlContext): Promise<TaskView | null> {
    if (node.taskId === null) return null
    const row = await loaders.task.load({ serviceCode: node.serviceCode, taskId: node.taskId })
    return row ? deriveTask(row.state) : null
  }

  @FieldResolver(() => User, {
    nullable: true,
    description: 'The user it is about; null when the callback names none.',
  })
  async user(@Root() node: NotificationNode, @Ctx() { loaders }: GraphqlContext): Promise<UserNode | null> {
    if (node.userName === null) return null
    const row = await loaders.user.load({ serviceCode: node.serviceCode, userName: node.userName })
    return row ? deriveUser(row.state) : null
  }
}

/**
 * The filter as store criteria, within the caller's scope; input no stored row could match is
 * refused rather than sent to the database.
 */
export function notificationCriteria(
  filter: NotificationFilter | null | undefined,
  scope: Scope,
): NotificationCriteria {
  const allowedServiceCodes = allowedCodes(scope)
  const allowedUserName = allowedUser(scope)
  if (!filter) return { allowedServiceCodes, allowedUserName }
  const types = filter.types ? [...new Set(filter.types)] : filter.types
  if (types && types.length > MAX_TYPES)
    throw badUserInput(`filter.types may list at most ${MAX_TYPES} types.`, 'filter')
  const taskIds = filter.taskIds ? [...new Set(filter.taskIds)] : filter.taskIds
  if (taskIds && taskIds.length > MAX_FILTER_IDS)
    throw badUserInput(`filter.taskIds may list at most ${MAX_FILTER_IDS} tasks.`, 'filter')
  if (taskIds?.some((id) => id.includes('\u0000')))
    throw badUserInput('filter.taskIds may not contain a NUL character.', 'filter')
  const kinds = filter.kinds ? [...new Set(filter.kinds)] : filter.kinds
  return {
    serviceCode: filter.serviceCode,
    types,
    ...(kinds ? kindCriteria(kinds) : {}),
    taskIds,
    userName: filter.userName,
    receivedFrom: filter.receivedFrom,
    receivedTo: filter.receivedTo,
    allowedServiceCodes,
    allowedUserName,
  }
}

function kindCriteria(
  kinds: NotificationKind[],
): Pick<NotificationCriteria, 'kindTypes' | 'unknownKinds' | 'knownTypes'> {
  const unknown = kinds.includes('UNKNOWN')
  return {
    kindTypes: kinds.flatMap((kind) => TYPE_OF_KIND.get(kind) ?? []),
    unknownKinds: unknown,
    ...(unknown ? { knownTypes: KNOWN_TYPES } : {}),
  }
}
