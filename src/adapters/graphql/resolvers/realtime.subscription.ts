import {
  type NotificationCriteria,
  type NotificationRow,
  notificationsAfter,
} from '../../../storage/notification.queries.js'

import { comparePositions, type LogPosition } from '../../../model/log.position.js'
import type { DirectSource, DirectTake, SubscriptionQueue } from '../../../work/realtime/subscription.queue.js'
import { type GraphqlContext, liveEngine, subscribeTo } from '../reads/request.context.js'
import { type NotificationNode, notificationCursor, notificationNode } from '../reads/notification.view.js'
import { Arg, Resolver, Root, Subscription } from '../type-graphql.shim.js'
import { NotificationFilter } from '../types/notification-filter.input.js'
import { Notification } from '../types/notification.type.js'
import { Task, TaskFilter } from '../types/task.type.js'
import { notificationCriteria } from './notification.resolver.js'
import { taskQuery } from './task.resolver.js'
import type { TaskView } from '../../../storage/tables/task.node.js'

interface NotificationArgs {
  filter?: NotificationFilter | null
  after?: string | null
}

/**
 * The subscription fields. Each resolves to its event as is: its arguments only choose the
 * events (in `subscribe`), which is what lets subscribers of one operation share an event's
 * result whatever their filter or cursor (src/adapters/websocket/ws.server.ts).
 */
@Resolver()
export class RealtimeSubscription {
  @Subscription(() => Notification, {
    description:
      'Every stored notification that matches, pushed once it is committed. With `after` (a cursor from ' +
      '`notifications` or from an earlier event), the notifications stored after it are replayed first, then ' +
      'live ones follow: none missed, none twice.',
    subscribe: ({ args, context }) => notificationSubscription(context as GraphqlContext, args as NotificationArgs),
  })
  notificationReceived(
    @Root() node: NotificationNode,
    @Arg('filter', () => NotificationFilter, {
      nullable: true,
      description: 'Which notifications to receive (by kind, task ids, user…); all the caller may read when absent.',
    })
    _filter: NotificationFilter | null,
    @Arg('after', () => String, {
      nullable: true,
      description:
        'A notification cursor (`Notification.cursor`, or an edge cursor of `notifications`): replay what was ' +
        'stored after it first.',
    })
    _after: string | null,
  ): NotificationNode {
    return node
  }

  @Subscription(() => Task, {
    description:
      'The task, folded again, each time a notification or a task list answer changes it (and it matches the ' +
      'filter after the change).',
    subscribe: ({ args, context }) =>
      subscribeTo(context, 'task', (scope) => taskQuery((args as { filter?: TaskFilter | null }).filter, scope)),
  })
  taskChanged(
    @Root() task: TaskView,
    @Arg('filter', () => TaskFilter, {
      nullable: true,
      description:
        'Which tasks to follow; a task page passes its own `ids` (or `taskIds`), a user page its `userName`. All ' +
        'the caller may read when absent.',
    })
    _filter: TaskFilter | null,
  ): TaskView {
    return task
  }
}

/**
 * Joins the live stream first, then replays the stored rows after the cursor, then hands over
 * to the live ones: a callback that became final during the replay is in both, and is passed
 * over once the replay has shown it. Both read the log in one order and only as far as it is
 * final (nothing can commit before a final position any more), so "after the last position
 * shown" is exactly "not yet shown".
 *
 * An async generator cannot run its `return()` while it waits for the next event, so the
 * client's "complete" would leave the live queue joined until one more event came; the outer
 * iterator closes the queue first, which ends that wait. Once the replay is over, the outer
 * iterator can also hand the live rows to a reader directly (`direct`, see SubscriptionQueue).
 */
function notificationSubscription(
  context: GraphqlContext,
  args: NotificationArgs,
): AsyncIterableIterator<NotificationNode> & DirectSource<NotificationNode> {
  const criteria: NotificationCriteria = notificationCriteria(args.filter, context.scope)
  const after = args.after ? notificationCursor.decode(args.after, 'after') : undefined
  const live = subscribeTo(context, 'notification', () => criteria)
  // Asked for now, awaited when the stream starts: a subscription the client ends first leaves no unhandled rejection.
  const whenLive = liveEngine(context).whenLive()
  whenLive.catch(() => {})
  const seen: Seen = { last: after, live: false }
  const stream = notificationStream(context, criteria, seen, live, whenLive)
  return {
    next: () => stream.next(),
    return: async () => {
      live.close()
      return stream.return(undefined)
    },
    throw: async (error: unknown) => {
      live.close()
      return stream.throw(error)
    },
    direct: (take, end) => {
      if (!seen.live) return false
      const taken: DirectTake<NotificationRow> = (row, batched) => {
        if (seen.last !== undefined && comparePositions(row, seen.last) <= 0) return
        seen.last = row
        take(liveNode(row), batched)
      }
      taken.flush = take.flush
      return live.direct(taken, end)
    },
    [Symbol.asyncIterator]() {
      return this
    },
  }
}

/** Where a notification subscription is: the last position it showed, and whether its replay is over. */
interface Seen {
  last: LogPosition | undefined
  live: boolean
}

async function* notificationStream(
  context: GraphqlContext,
  criteria: NotificationCriteria,
  seen: Seen,
  live: SubscriptionQueue<NotificationRow>,
  whenLive: Promise<void>,
): AsyncGenerator<NotificationNode> {
  try {
    await whenLive
    if (seen.last !== undefined) {
      const pageSize = context.config.realtime.replayPageSize
      for (;;) {
        const rows = await notificationsAfter(context.db, criteria, seen.last, pageSize)
        for (const row of rows) {
          seen.last = row
          yield notificationNode(row)
        }
        if (rows.length < pageSize) break
      }
    }
    seen.live = true
    for await (const row of live) {
      if (seen.last !== undefined && comparePositions(row, seen.last) <= 0) continue
      seen.last = row
      yield liveNode(row)
    }
  } finally {
    live.close()
  }
}

// The hub hands one row object to every subscriber of a filter; one node object for it lets
// subscribers of the same operation share the event's result (ws.server.ts). Replayed rows are
// each subscriber's own, and so are their nodes.
const liveNodes = new WeakMap<NotificationRow, NotificationNode>()
// The hub hands a row to thousands of subscribers in a row: the last node saves their lookups.
let lastLive: { row: NotificationRow; node: NotificationNode } | undefined

function liveNode(row: NotificationRow): NotificationNode {
  if (lastLive?.row === row) return lastLive.node
  let node = liveNodes.get(row)
  if (!node) {
    node = notificationNode(row)
    liveNodes.set(row, node)
  }
  lastLive = { row, node }
  return node
}
