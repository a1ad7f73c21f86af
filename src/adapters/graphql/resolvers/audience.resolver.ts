import DataLoader from 'dataloader'

import { taskHealth } from '../../../fold/task.health.js'
import {
  type LiveTaskRow,
  liveTasksByKeys,
  type MetricPointRow,
  reconciliation,
  serviceAudience,
  type ServiceMetricPointRow,
  taskAudience,
} from '../../../storage/history/audience.queries.js'
import type { TaskSampleEvent } from '../../../work/realtime/stream.table.js'
import { inScope, requireWholeService } from '../auth.scope.js'
import { type GraphqlContext, subscribeTo } from '../reads/request.context.js'
import { audienceWindow } from '../reads/audience.window.js'
import { Arg, Ctx, FieldResolver, Int, Query, Resolver, Root, Subscription } from '../type-graphql.shim.js'
import { TaskFilter } from '../types/task.type.js'
import { taskQuery } from './task.resolver.js'
import { countUnannounced } from '../../../storage/graph/recording.queries.js'
import {
  CallbackReconciliation,
  MetricPoint,
  MetricStep,
  NotificationKind,
  ServiceMetricPoint,
  TaskHealth,
  TaskSample,
} from '../types/audience.type.js'
import { Task } from '../types/task.type.js'
import { UpstreamStatus } from '../types/upstream.type.js'
import { epochOf, type TaskView } from '../../../storage/tables/task.node.js'
import { DateTimeScalar } from '../types/scalars.type.js'

const STEP = 'The resolution: every sample (RAW), or minute or hour rollups.'
const FROM = "The window's start (inclusive)."
const TO = "The window's end (exclusive); now by default."
const HOUR = 3_600_000

// One loader per request (or subscription operation), uncached: a subscription's context lives
// across events, and each event must read the task's latest sample, not the first it saw.
const liveLoaders = new WeakMap<
  object,
  DataLoader<{ serviceCode: string; taskId: string }, LiveTaskRow | undefined, string>
>()

function liveOf(context: GraphqlContext, task: TaskView): Promise<LiveTaskRow | undefined> {
  let loader = liveLoaders.get(context.loaders)
  if (!loader) {
    loader = new DataLoader(
      async (keys) => {
        const rows = new Map(
          (await liveTasksByKeys(context.db, keys)).map((row) => [`${row.serviceCode}\u0000${row.taskId}`, row]),
        )
        return keys.map((key) => rows.get(`${key.serviceCode}\u0000${key.taskId}`))
      },
      { cache: false },
    )
    liveLoaders.set(context.loaders, loader)
  }
  return loader.load({ serviceCode: task.serviceCode, taskId: task.id })
}

@Resolver(() => Task)
export class TaskAudienceResolver {
  @FieldResolver(() => [MetricPoint], {
    description:
      'Its audience and bitrates over time, oldest first. By default over its life, at most the last 24 hours ' +
      '(and at most 10,000 points of the step).',
  })
  async metrics(
    @Root() task: TaskView,
    @Arg('step', () => MetricStep, { nullable: true, defaultValue: 'MINUTE', description: STEP })
    stepArg: MetricStep | null,
    @Arg('from', () => DateTimeScalar, { nullable: true, description: FROM }) from: Date | null | undefined,
    @Arg('to', () => DateTimeScalar, { nullable: true, description: TO }) to: Date | null | undefined,
    @Ctx() { db, config }: GraphqlContext,
  ): Promise<MetricPointRow[]> {
    const step = stepArg ?? 'MINUTE'
    const ended = task.status === 'ENDED' && !task.listed
    const end = ended ? Math.max(epochOf(task.endedAt) ?? 0, epochOf(task.lastSeenAt) ?? 0) + 1 : null
    const starts = [epochOf(task.firstSeenAt), epochOf(task.startedAt)].filter((at): at is number => at !== null)
    const window = audienceWindow({ step, from, to }, config, Date.now(), {
      start: starts.length > 0 ? Math.min(...starts) : null,
      end,
    })
    return taskAudience(db, { serviceCode: task.serviceCode, taskId: task.id }, step, window)
  }

  @FieldResolver(() => Int, {
    nullable: true,
    description:
      'Concurrent HTTP-flv viewers at its latest sample; null when the latest task list answer does not list it.',
  })
  async viewers(@Root() task: TaskView, @Ctx() context: GraphqlContext): Promise<number | null> {
    const live = await liveOf(context, task)
    return live?.listed ? live.viewers : null
  }

  @FieldResolver(() => Int, {
    nullable: true,
    description: 'The most concurrent HTTP-flv viewers in one of its samples; null before its first sample.',
  })
  async peakViewers(@Root() task: TaskView, @Ctx() context: GraphqlContext): Promise<number | null> {
    return (await liveOf(context, task))?.peakViewers ?? null
  }

  @FieldResolver(() => TaskHealth, {
    description:
      'Its health: live and fed, starving, reconnecting, ended, or unknown; a change is pushed on `taskChanged`.',
  })
  async health(@Root() task: TaskView, @Ctx() context: GraphqlContext): Promise<TaskHealth> {
    const live = await liveOf(context, task)
    const waiting = epochOf(task.resumes?.[task.resumes.length - 1]?.at)
    const view = taskHealth({
      status: task.status,
      listed: task.listed,
      endedAt: epochOf(task.endedAt),
      waitingSince: waiting,
      sampled: live ? { health: live.health, since: live.healthSince.getTime() } : undefined,
      stale: context.upstream.isStale(task.serviceCode),
    })
    return { state: view.state, since: view.since === null ? null : new Date(view.since), reason: view.reason }
  }

  @FieldResolver(() => [NotificationKind], {
    description:
      'Callbacks the task list showed were due and that did not come within `reconcile.graceMs`: LIVE_START ' +
      '(listed live, no type 0), LIVE_END (left the list, no type 1).',
  })
  async missingCallbacks(@Root() task: TaskView, @Ctx() context: GraphqlContext): Promise<NotificationKind[]> {
    const live = await liveOf(context, task)
    const kinds: NotificationKind[] = []
    if (live?.missingStart) kinds.push('LIVE_START')
    if (live?.missingEnd) kinds.push('LIVE_END')
    return kinds
  }
}

@Resolver()
export class ServiceAudienceResolver {
  @Query(() => [ServiceMetricPoint], {
    description:
      "A service code's live tasks, viewers and input bitrate over time, oldest first; by default the last 24 " +
      'hours (at most 10,000 points of the step). Empty for a code the caller may not read.',
  })
  async serviceMetrics(
    @Arg('serviceCode', () => String, { description: 'A service code the caller may read.' }) serviceCode: string,
    @Arg('step', () => MetricStep, { nullable: true, defaultValue: 'MINUTE', description: STEP })
    stepArg: MetricStep | null,
    @Arg('from', () => DateTimeScalar, { nullable: true, description: FROM }) from: Date | null | undefined,
    @Arg('to', () => DateTimeScalar, { nullable: true, description: TO }) to: Date | null | undefined,
    @Ctx() { db, config, scope, upstream }: GraphqlContext,
  ): Promise<ServiceMetricPointRow[]> {
    requireWholeService(scope, "a service code's metrics")
    const step = stepArg ?? 'MINUTE'
    const window = audienceWindow({ step, from, to }, config, Date.now())
    if (!inScope(scope, serviceCode)) return []
    upstream.read([serviceCode])
    return serviceAudience(db, serviceCode, step, window)
  }
}

@Resolver(() => UpstreamStatus)
export class UpstreamCallbacksResolver {
  @FieldResolver(() => CallbackReconciliation, {
    description: 'Push against poll over the last hour: callbacks found missing, and how late callbacks arrive.',
  })
  async callbacks(
    @Root() status: UpstreamStatus,
    @Ctx() { db, scope }: GraphqlContext,
  ): Promise<CallbackReconciliation> {
    requireWholeService(scope, "a service code's callback reconciliation")
    if (!inScope(scope, status.serviceCode))
      return { missingStart: 0, missingEnd: 0, missingArchived: 0, delayP50Ms: null, delayP99Ms: null }
    const since = new Date(Date.now() - HOUR)
    const [pushed, missingArchived] = await Promise.all([
      reconciliation(db, status.serviceCode, since),
      countUnannounced(db, status.serviceCode, since),
    ])
    return { ...pushed, missingArchived }
  }
}

@Resolver()
export class AudienceSubscription {
  @Subscription(() => TaskSample, {
    description:
      'Every sample of the matching tasks as task list answers are taken: one event per task per answer, ' +
      'whichever gateway instance polled it.',
    subscribe: ({ args, context }) =>
      subscribeTo(context, 'sample', (scope) => taskQuery((args as { filter?: TaskFilter | null }).filter, scope)),
  })
  metricsSampled(
    @Root() sample: TaskSampleEvent,
    @Arg('filter', () => TaskFilter, {
      nullable: true,
      description: 'Which tasks to follow, as for `taskChanged`; all the caller may read when absent.',
    })
    _filter: TaskFilter | null,
  ): TaskSampleEvent {
    return sample
  }
}
