import type { TaskView } from '../../../storage/tables/task.node.js'
import type { SubscriptionQueue } from '../../../work/realtime/subscription.queue.js'
import type { TimelineTouch } from '../../../work/realtime/stream.table.js'
import { requireGlobalId } from '../global.id.js'
import { badUserInput } from '../graphql.errors.js'
import { type GraphqlContext, subscribeTo } from '../reads/request.context.js'
import { Arg, ID, Resolver, Root, Subscription } from '../type-graphql.shim.js'
import { TimelineEntry } from '../types/timeline.type.js'
import { entriesAfter, type TimelineEntryValue, taskTimeline, timelineCursor } from './timeline.resolver.js'

interface TimelineArgs {
  id: string
  after?: string | null
}

/** `Subscription.taskTimeline`: a task's line as it grows, one more stream of the one realtime engine. */
@Resolver()
export class TimelineSubscription {
  @Subscription(() => TimelineEntry, {
    description:
      "Each new entry of a task's timeline as it happens. With `after` (an entry's `cursor`, from " +
      '`Task.timeline` or an earlier event), the entries after it are sent first, then the new ones: none ' +
      'missed across a reconnect or a gateway restart. An entry already sent is not sent again when only its ' +
      'summary grows (a run of answers, a delivery retried).',
    subscribe: ({ args, context }) => timelineSubscription(context as GraphqlContext, args as TimelineArgs),
  })
  taskTimeline(
    @Root() entry: TimelineEntryValue,
    @Arg('id', () => ID, { description: "The task's global id (`Task.id`)." }) _id: string,
    @Arg('after', () => String, {
      nullable: true,
      description: "An entry's `cursor`: send the entries after it first.",
    })
    _after: string | null,
  ): TimelineEntryValue {
    return entry
  }
}

/**
 * Joins the engine's timeline stream for the task first, then reads the line: a change that lands
 * between the two is read by the first read or touches the queue, never neither. The task is
 * looked up as `task(id:)` looks it up, so whatever scope the caller has holds here too.
 */
async function timelineSubscription(
  context: GraphqlContext,
  args: TimelineArgs,
): Promise<AsyncIterableIterator<TimelineEntryValue>> {
  const [serviceCode = '', taskId = ''] = requireGlobalId(args.id, 'id', ['Task']).key
  const after = args.after ? timelineCursor.decode(args.after, 'after') : undefined
  const live = subscribeTo(context, 'timeline', () => ({ serviceCode, taskId }))
  try {
    const row = await context.loaders.task.load({ serviceCode, taskId })
    if (!row) throw badUserInput('id names no task the caller may read.', 'id')
  } catch (error) {
    live.close()
    throw error
  }
  const stream = timelineStream(context, { serviceCode, id: taskId }, after, live)
  const iterator: AsyncIterableIterator<TimelineEntryValue> = {
    next: () => stream.next(),
    return: async () => {
      live.close()
      return stream.return(undefined)
    },
    throw: async (error: unknown) => {
      live.close()
      return stream.throw(error)
    },
    [Symbol.asyncIterator]: () => iterator,
  }
  return iterator
}

async function* timelineStream(
  context: GraphqlContext,
  task: Pick<TaskView, 'serviceCode' | 'id'>,
  after: { at: number; key: string } | undefined,
  live: SubscriptionQueue<TimelineTouch>,
): AsyncGenerator<TimelineEntryValue> {
  // Keys, not a position: an entry that lands behind the last one sent (a transaction that committed
  // late) is new all the same.
  const sent = new Set<string>()
  try {
    const first = await taskTimeline(context.db, task)
    const fresh = new Set(entriesAfter(first, after).map((entry) => entry.key))
    for (const entry of first) {
      sent.add(entry.key)
      if (fresh.has(entry.key)) yield entry
    }
    for await (const _touch of live) {
      // Touches that queued while the line was read are answered by the one read that follows them.
      while (live.size > 0) await live.next()
      for (const entry of await taskTimeline(context.db, task)) {
        if (sent.has(entry.key)) continue
        sent.add(entry.key)
        yield entry
      }
    }
  } finally {
    live.close()
  }
}
