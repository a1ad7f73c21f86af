import { type NotificationCriteria, countNotifications, notificationPage } from '../../../storage/notification.queries.js'
import { allowedCodes, type Scope } from '../auth.scope.js'
import type { GraphqlContext } from '../context.js'
import { badUserInput, refuseNul } from '../graphql.errors.js'
import { type NotificationNode, notificationCursor, notificationNode } from '../notification.view.js'
import { type ConnectionData, pageWindow, toConnection } from '../pagination.js'
import { Arg, Ctx, Int, Query, Resolver } from '../type-graphql.shim.js'
// The kinds are reached only through the Notification interface; importing them registers them.
import '../types/notification-kinds.type.js'
import { NotificationFilter } from '../types/notification-filter.input.js'
import { NotificationConnection } from '../types/notification.type.js'

// More types than the service publishes, and far below the statement's parameter bound.
const MAX_TYPES = 100

@Resolver()
export class NotificationResolver {
  @Query(() => NotificationConnection, { description: 'Stored notification callbacks, newest first.' })
  async notifications(
    @Arg('filter', () => NotificationFilter, { nullable: true }) filter: NotificationFilter | null | undefined,
    @Arg('first', () => Int, { nullable: true, description: 'How many to return; the server sets the default and the largest allowed.' })
    first: number | null | undefined,
    @Arg('after', () => String, { nullable: true, description: 'A cursor from an earlier page: return the notifications older than it.' })
    after: string | null | undefined,
    @Ctx() { db, config, scope }: GraphqlContext,
  ): Promise<ConnectionData<NotificationNode>> {
    const window = pageWindow({ first, after }, config.graphql, notificationCursor)
    const criteria = notificationCriteria(filter, scope)
    const rows = await notificationPage(db, criteria, { before: window.after, limit: window.fetch })
    return toConnection(rows, window, {
      codec: notificationCursor,
      keyOf: (row) => row,
      toNode: (row) => notificationNode(row),
      countAll: () => countNotifications(db, criteria),
    })
  }
}

/**
 * The filter as store criteria, within the caller's scope; input no stored row could match is
 * refused rather than sent to the database.
 */
export function notificationCriteria(filter: NotificationFilter | null | undefined, scope: Scope): NotificationCriteria {
  const allowedServiceCodes = allowedCodes(scope)
  if (!filter) return { allowedServiceCodes }
  refuseNul({ serviceCode: filter.serviceCode, taskId: filter.taskId, userName: filter.userName }, 'filter')
  const types = filter.types ? [...new Set(filter.types)] : filter.types
  if (types && types.length > MAX_TYPES) throw badUserInput(`filter.types may list at most ${MAX_TYPES} types.`, 'filter')
  return {
    serviceCode: filter.serviceCode,
    types,
    taskId: filter.taskId,
    userName: filter.userName,
    receivedFrom: filter.receivedFrom,
    receivedTo: filter.receivedTo,
    allowedServiceCodes,
  }
}
