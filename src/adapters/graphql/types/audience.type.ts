import { Field, Float, Int, ObjectType, registerEnumType } from '../type-graphql.shim.js'
import { NotificationKind } from './notification.enums.js'
import { DateTimeScalar } from './scalars.type.js'
import { Task } from './task.type.js'

/** The resolution of a series. */
export const MetricStep = { RAW: 'RAW', MINUTE: 'MINUTE', HOUR: 'HOUR' } as const
export type MetricStep = (typeof MetricStep)[keyof typeof MetricStep]
registerEnumType(MetricStep, {
  name: 'MetricStep',
  description: 'The resolution of a series of samples.',
  valuesConfig: {
    RAW: {
      description:
        'Every sample: one per task list answer that listed the task (kept `history.rawRetention`, 48 h by default).',
    },
    MINUTE: { description: 'Minute rollups (kept `history.minuteRetention`, 30 days by default).' },
    HOUR: { description: 'Hour rollups (kept `history.hourRetention`, 400 days by default).' },
  },
})

/** Where a task's health stands. */
export const HealthState = {
  HEALTHY: 'HEALTHY',
  STARVING: 'STARVING',
  RECONNECTING: 'RECONNECTING',
  ENDED: 'ENDED',
  UNKNOWN: 'UNKNOWN',
} as const
registerEnumType(HealthState, {
  name: 'HealthState',
  description: "A task's health, from its status and its samples.",
  valuesConfig: {
    HEALTHY: { description: 'Listed live by the task list, its input bytes growing.' },
    STARVING: {
      description:
        'Listed live, but its input bytes are the same in two consecutive samples: the input stopped delivering.',
    },
    RECONNECTING: { description: 'Waiting for its client to reconnect (type 15 status 0).' },
    ENDED: { description: 'The task ended.' },
    UNKNOWN: {
      description: "Not sampled yet, not listed by the latest answer, or its service code's task list is stale.",
    },
  },
})

@ObjectType('MetricPoint', {
  simpleResolvers: true,
  description: "One point of a task's series: a sample (RAW) or a minute or hour bucket of samples.",
})
export class MetricPoint {
  @Field(() => DateTimeScalar, { description: "The bucket's start; for RAW, when the sample was taken." }) at!: Date
  @Field(() => Int, { description: 'Samples in the bucket (1 for RAW).' }) samples!: number
  @Field(() => Int, {
    nullable: true,
    description:
      "Concurrent viewers: the mean over the bucket, rounded. Viewers are the sum of the outputs' " +
      '`http_connections_num`, which counts HTTP-flv connections only.',
  })
  viewers!: number | null
  @Field(() => Int, { nullable: true, description: 'The most concurrent viewers in one sample of the bucket.' })
  viewersMax!: number | null
  @Field(() => Float, {
    nullable: true,
    description:
      'Input bits per second, from the growth of `input_bytes` between consecutive samples; null when no step is ' +
      'known (first sample, or the counter went down: a restart gives no rate, never a negative one).',
  })
  inputBitrate!: number | null
  @Field(() => Float, {
    nullable: true,
    description: "Output bits per second, from the growth of the outputs' `http_output_bytes`, like inputBitrate.",
  })
  outputBitrate!: number | null
}

@ObjectType('ServiceMetricPoint', {
  simpleResolvers: true,
  description: "One point of a service code's series: a task list answer (RAW) or a minute or hour bucket of answers.",
})
export class ServiceMetricPoint {
  @Field(() => DateTimeScalar, { description: "The bucket's start; for RAW, when the answer was taken." }) at!: Date
  @Field(() => Int, { description: 'Task list answers sampled in the bucket (1 for RAW).' }) samples!: number
  @Field(() => Int, {
    nullable: true,
    description: 'Tasks the answers listed (live), the mean over the bucket, rounded.',
  })
  liveTasks!: number | null
  @Field(() => Int, {
    nullable: true,
    description: 'Concurrent HTTP-flv viewers over all its tasks, the mean over the bucket, rounded.',
  })
  viewers!: number | null
  @Field(() => Int, {
    nullable: true,
    description: 'The most concurrent viewers over all its tasks in one answer of the bucket.',
  })
  viewersMax!: number | null
  @Field(() => Float, {
    nullable: true,
    description: 'Input bits per second over all its tasks, from the growth of their `input_bytes`.',
  })
  inputBitrate!: number | null
}

@ObjectType('TaskHealth', { simpleResolvers: true, description: "A task's health: its state, since when, and why." })
export class TaskHealth {
  @Field(() => HealthState, { description: 'Where its health stands.' }) state!: keyof typeof HealthState
  @Field(() => DateTimeScalar, { nullable: true, description: 'When this state began, when known.' })
  since!: Date | null
  @Field(() => String, { nullable: true, description: 'Why, in words, for every state but HEALTHY.' }) reason!:
    | string
    | null
}

@ObjectType('TaskSample', { simpleResolvers: true, description: "One task's sample at one task list answer." })
export class TaskSample {
  @Field(() => Task, { description: 'The task, as it is after that answer.' }) task!: unknown
  @Field(() => DateTimeScalar, { description: 'When the answer was taken.' }) at!: Date
  @Field(() => Int, { description: "Concurrent HTTP-flv viewers: the sum of its outputs' `http_connections_num`." })
  viewers!: number
  @Field(() => Float, {
    nullable: true,
    description: 'Input bits per second since its previous sample; null on its first, or after a counter reset.',
  })
  inputBitrate!: number | null
  @Field(() => Float, {
    nullable: true,
    description: 'Output bits per second since its previous sample, like inputBitrate.',
  })
  outputBitrate!: number | null
}

@ObjectType('CallbackReconciliation', {
  simpleResolvers: true,
  description:
    'Push against poll for one service code over the last hour: callbacks the task list showed were due but ' +
    'never came, and how late callbacks arrive.',
})
export class CallbackReconciliation {
  @Field(() => Int, {
    description: 'Tasks the task list showed live with no type 0 within `reconcile.graceMs`, found in the last hour.',
  })
  missingStart!: number
  @Field(() => Int, {
    description: 'Tasks that left the task list with no type 1 within `reconcile.graceMs`, found in the last hour.',
  })
  missingEnd!: number
  @Field(() => Int, {
    description:
      "Archived files first seen in the last hour that the cloud's archive (`list_files`) lists and no type 2 " +
      'announced; a file whose type 2 comes later leaves the count.',
  })
  missingArchived!: number
  @Field(() => Float, {
    nullable: true,
    description:
      'The median callback delay in the last hour, in milliseconds: received time minus the signed `svc-timestamp`.',
  })
  delayP50Ms!: number | null
  @Field(() => Float, {
    nullable: true,
    description: 'The 99th percentile of the callback delay in the last hour, in milliseconds.',
  })
  delayP99Ms!: number | null
}

export { NotificationKind }
