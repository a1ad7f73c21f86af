import { GraphQLError } from 'graphql'
import type { TaskSampleEvent } from '../../../work/sample.hub.js'
import { SLOW_CONSUMER_CLOSE } from '../../websocket/ws.server.js'
import type { GraphqlContext } from '../context.js'
import { Arg, Resolver, Root, Subscription } from '../type-graphql.shim.js'
import { TaskSample } from '../types/metrics.type.js'
import { TaskFilter } from '../types/task.type.js'
import { taskQuery } from './task.resolver.js'

@Resolver()
export class MetricsSubscription {
  @Subscription(() => TaskSample, {
    description: 'Every sample of the matching tasks as task list answers are taken: one event per task per answer, whichever gateway instance polled it.',
    subscribe: ({ args, context }) => {
      const { history, closeSocket, scope } = context as GraphqlContext
      if (!history) throw new GraphQLError('Subscriptions are served over websockets (graphql-ws) at /graphql.', { extensions: { code: 'BAD_REQUEST' } })
      const filter = taskQuery((args as { filter?: TaskFilter | null }).filter, scope)
      return history.hub.subscribe(filter, () => closeSocket?.(SLOW_CONSUMER_CLOSE.code, SLOW_CONSUMER_CLOSE.reason))
    },
  })
  metricsSampled(
    @Root() sample: TaskSampleEvent,
    @Arg('filter', () => TaskFilter, { nullable: true, description: 'Which tasks to follow, as for `taskChanged`; all the caller may read when absent.' }) _filter: TaskFilter | null,
  ): TaskSampleEvent {
    return sample
  }
}
