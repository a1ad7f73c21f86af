import { Field, Int, ObjectType, registerEnumType } from '../type-graphql.shim.js'
import { DateTimeScalar } from './scalars.type.js'

/** Why a task_list poll failed; UNKNOWN for a kind this version does not know (or a store failure). */
export const UpstreamErrorKind = {
  NOT_CONFIGURED: 'NOT_CONFIGURED',
  RET: 'RET',
  HTTP: 'HTTP',
  TIMEOUT: 'TIMEOUT',
  NETWORK: 'NETWORK',
  INVALID_ANSWER: 'INVALID_ANSWER',
  UNKNOWN: 'UNKNOWN',
} as const
export type UpstreamErrorKind = (typeof UpstreamErrorKind)[keyof typeof UpstreamErrorKind]
registerEnumType(UpstreamErrorKind, {
  name: 'UpstreamErrorKind',
  description: 'Why a task list request failed.',
  valuesConfig: {
    NOT_CONFIGURED: { description: 'No baseUrl or no secret to sign with.' },
    RET: { description: 'The service answered with a non-zero `ret` (see `ret`).' },
    HTTP: { description: 'The service answered with a non-2xx HTTP status.' },
    TIMEOUT: { description: 'No complete answer within `upstream.timeoutMs` (after the retries).' },
    NETWORK: { description: 'The connection failed: refused, reset, DNS.' },
    INVALID_ANSWER: { description: 'A 2xx answer that is not a task list answer.' },
    UNKNOWN: { description: 'Any other failure, such as an answer the database could not keep.' },
  },
})

/** A stored kind as the enum; a kind this version does not know reads as UNKNOWN. */
export function upstreamErrorKind(stored: string): UpstreamErrorKind {
  return Object.hasOwn(UpstreamErrorKind, stored) ? (stored as UpstreamErrorKind) : UpstreamErrorKind.UNKNOWN
}

@ObjectType('UpstreamError', { simpleResolvers: true, description: 'Why the last task list request failed.' })
export class UpstreamErrorInfo {
  @Field(() => DateTimeScalar, { description: 'When the failed request was made.' }) at!: Date
  @Field(() => UpstreamErrorKind, { description: 'What kind of failure it was.' }) kind!: UpstreamErrorKind
  @Field(() => String, { description: 'What went wrong, in words (never a secret or a signature).' }) message!: string
  @Field(() => Int, { nullable: true, description: "The service's non-zero `ret`, for kind RET." }) ret!: number | null
}

@ObjectType('UpstreamStatus', {
  simpleResolvers: true,
  description:
    "How fresh one service code's task list is, as the poller last stored it (shared by every gateway instance).",
})
export class UpstreamStatus {
  @Field(() => String, { description: 'The service code this is about.' }) serviceCode!: string
  @Field(() => Boolean, { description: 'Whether livegate polls this code (it has a baseUrl and polling is on).' })
  configured!: boolean
  @Field(() => Boolean, { description: 'The last poll succeeded.' }) healthy!: boolean
  @Field(() => Boolean, {
    description:
      'Polled, and no successful poll within three poll intervals and one request timeout: its tasks and users ' +
      'may be out of date. Never true for a code that is not polled.',
  })
  stale!: boolean
  @Field(() => Int, {
    description:
      'Failed polls since the last success; each one doubles the wait before the next poll, up to ' +
      '`upstream.maxBackoffMs`.',
  })
  consecutiveFailures!: number
  @Field(() => DateTimeScalar, { nullable: true, description: 'When the last poll, successful or not, was made.' })
  lastPollAt!: Date | null
  @Field(() => DateTimeScalar, {
    nullable: true,
    description: 'When the last successful poll was made: what the stored tasks and users are as fresh as.',
  })
  lastSuccessAt!: Date | null
  @Field(() => DateTimeScalar, {
    nullable: true,
    description: "When the next poll is due (by the polling instance's clock).",
  })
  nextPollAt!: Date | null
  @Field(() => UpstreamErrorInfo, { nullable: true, description: 'The last failure, also after a later success.' })
  lastError!: UpstreamErrorInfo | null
  @Field(() => Int, {
    nullable: true,
    description: 'How long the last poll took, in milliseconds, whatever its outcome.',
  })
  lastLatencyMs!: number | null
  @Field(() => Int, { nullable: true, description: 'Tasks in the last successful answer.' }) taskCount!: number | null
  @Field(() => Int, { nullable: true, description: 'Users in the last successful answer.' }) userCount!: number | null
}

@ObjectType('ArchiveStatus', {
  simpleResolvers: true,
  description:
    "How fresh one service code's archive (`list_files`) is, as its poller last stored it: the task list's shape.",
})
export class ArchiveStatus {
  @Field(() => Boolean, {
    description:
      'Whether livegate asks this code (it has a baseUrl and a secret, and `archive.pollIntervalMs` is not 0).',
  })
  configured!: boolean
  @Field(() => Boolean, { description: 'The last request succeeded.' }) healthy!: boolean
  @Field(() => Boolean, {
    description:
      'Asked, and no successful answer within three intervals and one request timeout. Never true for a code not ' +
      'asked.',
  })
  stale!: boolean
  @Field(() => Int, { description: 'Failed requests since the last success.' }) consecutiveFailures!: number
  @Field(() => DateTimeScalar, { nullable: true, description: 'When the last request, successful or not, was made.' })
  lastPollAt!: Date | null
  @Field(() => DateTimeScalar, {
    nullable: true,
    description: 'When the last successful answer was taken: what the listed values are as fresh as.',
  })
  lastSuccessAt!: Date | null
  @Field(() => UpstreamErrorInfo, { nullable: true, description: 'The last failure, also after a later success.' })
  lastError!: UpstreamErrorInfo | null
  @Field(() => Int, { nullable: true, description: 'Files in the last successful answer.' }) fileCount!: number | null
}
