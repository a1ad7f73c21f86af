import { Field, ID, InputType, ObjectType, registerEnumType } from '../type-graphql.shim.js'
import { ConnectionType } from './connection.type.js'
import { Input, Output, Recording, Resume, Thumbnail } from './output.type.js'
import { DateTimeScalar, SafeIntScalar } from './scalars.type.js'

/** Where a task is in its life (the fold's rules: README, "How a task's state is derived"). */
export const TaskStatus = { LIVE: 'LIVE', WAITING_RECONNECT: 'WAITING_RECONNECT', ENDED: 'ENDED' } as const
registerEnumType(TaskStatus, {
  name: 'TaskStatus',
  valuesConfig: {
    LIVE: { description: 'Started (type 0) or listed by the task list, and not ended.' },
    WAITING_RECONNECT: { description: 'An abnormal client disconnect was seen (type 15 status 0) and no resume since.' },
    ENDED: { description: 'Ended: see endReason.' },
  },
})

/** Why a task ended. */
export const EndReason = { USER_STOPPED: 'USER_STOPPED', ABNORMAL: 'ABNORMAL', VANISHED: 'VANISHED' } as const
registerEnumType(EndReason, {
  name: 'EndReason',
  valuesConfig: {
    USER_STOPPED: { description: 'The live end (type 1) said reach_end=1: the user stopped.' },
    ABNORMAL: { description: 'The live end (type 1) said reach_end=0: the server stopped it abnormally.' },
    VANISHED: { description: 'It left the task list without a live end notification.' },
  },
})

@ObjectType('Task', { simpleResolvers: true, description: 'A live task: the task list and every notification about it, folded into one.' })
export class Task {
  @Field(() => ID, { description: 'The `hashed_id` (the task list\'s `id`).' }) id!: string
  @Field(() => String) serviceCode!: string
  @Field(() => String, { nullable: true, description: 'The server the task is on.' }) vsId!: string | null
  @Field(() => String, { nullable: true, description: 'The user who started the live.' }) author!: string | null
  @Field(() => TaskStatus) status!: keyof typeof TaskStatus
  @Field(() => EndReason, { nullable: true, description: 'Why it ended; null while it runs, or when no notification said why.' })
  endReason!: keyof typeof EndReason | null
  @Field(() => Boolean, { nullable: true, description: 'A resumed (continued) live.' }) isResume!: boolean | null
  @Field(() => Boolean, { nullable: true, description: 'Live only: not archived at the end.' }) liveOnly!: boolean | null
  @Field(() => String, { nullable: true, description: 'The business text given at creation, decoded.' }) opaque!: string | null
  @Field(() => DateTimeScalar, { nullable: true, description: 'The live start by the service\'s clock (`created_at`), else first sight.' })
  startedAt!: Date | null
  @Field(() => DateTimeScalar, { nullable: true }) endedAt!: Date | null
  @Field(() => Boolean, { description: 'Listed by the latest successful task list answer.' }) listed!: boolean
  @Field(() => DateTimeScalar, { nullable: true, description: 'First listed by the task list.' }) firstSeenAt!: Date | null
  @Field(() => DateTimeScalar, { nullable: true, description: 'Last listed by the task list.' }) lastSeenAt!: Date | null
  @Field(() => DateTimeScalar, {
    nullable: true,
    description: 'When a task list poll last confirmed this task: the latest answer that listed it, or the first that no longer did (null if no answer ever did). Later answers are in `upstream(serviceCode).lastSuccessAt`.',
  })
  confirmedAt!: Date | null
  @Field(() => String, { nullable: true, description: 'The prefix of the HTTP flv play address.' }) httpLiveUrl!: string | null
  @Field(() => SafeIntScalar, { nullable: true }) inputBytes!: number | null
  @Field(() => [Output]) outputs!: Output[]
  @Field(() => [Input]) inputs!: Input[]
  @Field(() => [Recording]) recordings!: Recording[]
  @Field(() => [Thumbnail], { description: 'The latest thumbnails, newest first (at most 5).' }) thumbnails!: Thumbnail[]
  @Field(() => [Resume], { description: 'Disconnects and resumes (type 15), oldest first.' }) resumes!: Resume[]
}

@InputType('TaskFilter', { description: 'Every given condition must hold.' })
export class TaskFilter {
  @Field(() => String, { nullable: true }) serviceCode?: string | null
  @Field(() => [TaskStatus], { nullable: true, description: 'Any of these.' }) status?: Array<keyof typeof TaskStatus> | null
  @Field(() => String, { nullable: true }) author?: string | null
  @Field(() => DateTimeScalar, { nullable: true, description: 'Started at or after.' }) startedFrom?: Date | null
  @Field(() => DateTimeScalar, { nullable: true, description: 'Started before.' }) startedTo?: Date | null
}

@ObjectType('TaskConnection', { simpleResolvers: true, description: 'Tasks, newest start first.' })
export class TaskConnection extends ConnectionType('Task', () => Task) {}
