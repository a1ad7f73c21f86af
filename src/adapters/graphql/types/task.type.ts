import { Field, ID, InputType, Int, ObjectType, registerEnumType } from '../type-graphql.shim.js'
import { ConnectionType } from './connection.type.js'
import { Node } from './node.type.js'
import { Input, Resume, Thumbnail } from './task-parts.type.js'
import { DateTimeScalar, SafeIntScalar } from './scalars.type.js'

/** Where a task is in its life (the fold's rules: README, "How a task's state is derived"). */
export const TaskStatus = { LIVE: 'LIVE', WAITING_RECONNECT: 'WAITING_RECONNECT', ENDED: 'ENDED' } as const
registerEnumType(TaskStatus, {
  name: 'TaskStatus',
  description: 'Where a task is in its life, folded from its notifications and the task list.',
  valuesConfig: {
    LIVE: { description: 'Started (type 0) or listed by the task list, and not ended.' },
    WAITING_RECONNECT: {
      description: 'An abnormal client disconnect was seen (type 15 status 0) and no resume since.',
    },
    ENDED: { description: 'Ended: see endReason.' },
  },
})

/** Why a task ended. */
export const EndReason = {
  USER_STOPPED: 'USER_STOPPED',
  ABNORMAL: 'ABNORMAL',
  VANISHED: 'VANISHED',
  STOPPED: 'STOPPED',
} as const
registerEnumType(EndReason, {
  name: 'EndReason',
  description: 'Why a task ended.',
  valuesConfig: {
    USER_STOPPED: { description: 'The live end (type 1) said reach_end=1: the user stopped.' },
    ABNORMAL: { description: 'The live end (type 1) said reach_end=0: the server stopped it abnormally.' },
    VANISHED: { description: 'It left the task list without a live end notification.' },
    STOPPED: {
      description:
        'Stopped through livegate (`stopTask`, accepted by the cloud), whatever the live end notification said; ' +
        'see `Task.stopRequest`.',
    },
  },
})

// `id`, `taskId`, `user` and `notifications` are resolved by TaskResolver: the fold's TaskView
// holds the `hashed_id` in `id`.
@ObjectType('Task', {
  simpleResolvers: true,
  implements: Node,
  description: 'A live task: the task list and every notification about it, folded into one.',
})
export class Task extends Node {
  @Field(() => String, { description: 'The service code the task runs under.' }) serviceCode!: string
  @Field(() => String, { nullable: true, description: 'The server the task is on (`vs_id`).' }) vsId!: string | null
  @Field(() => String, {
    nullable: true,
    name: 'userName',
    simple: false,
    description:
      "The user who started the live (`author`, else the task list's first input); the user itself is `user`.",
  })
  author!: string | null
  @Field(() => TaskStatus, { description: 'Where the task is in its life.' }) status!: keyof typeof TaskStatus
  @Field(() => EndReason, {
    nullable: true,
    description: 'Why it ended; null while it runs, or when no notification said why.',
  })
  endReason!: keyof typeof EndReason | null
  @Field(() => Boolean, { nullable: true, description: 'A resumed (continued) live (`is_resume`).' }) isResume!:
    | boolean
    | null
  @Field(() => Boolean, { nullable: true, description: 'Live only: not archived at the end (`live_only`).' }) liveOnly!:
    | boolean
    | null
  @Field(() => String, { nullable: true, description: 'The business text given at creation (`opaque`), decoded.' })
  opaque!: string | null
  @Field(() => DateTimeScalar, {
    nullable: true,
    description: "The live start by the service's clock (`created_at`), else first sight.",
  })
  startedAt!: Date | null
  @Field(() => DateTimeScalar, {
    nullable: true,
    description:
      "When it ended: its live end by the service's clock, or when the task list stopped listing it; null while " +
      'it runs.',
  })
  endedAt!: Date | null
  @Field(() => Boolean, { description: 'Listed by the latest successful task list answer.' }) listed!: boolean
  @Field(() => DateTimeScalar, { nullable: true, description: 'First listed by the task list.' })
  firstSeenAt!: Date | null
  @Field(() => DateTimeScalar, { nullable: true, description: 'Last listed by the task list.' })
  lastSeenAt!: Date | null
  @Field(() => DateTimeScalar, {
    nullable: true,
    description:
      'When a task list poll last confirmed this task: the latest answer that listed it, or the first that no ' +
      'longer did (null if no answer ever did). Later answers are in `upstream(serviceCode).lastSuccessAt`.',
  })
  confirmedAt!: Date | null
  @Field(() => String, { nullable: true, description: 'The prefix of the HTTP flv play address (`http_live_url`).' })
  httpLiveUrl!: string | null
  @Field(() => SafeIntScalar, { nullable: true, description: 'Bytes of input so far (`input_bytes`).' }) inputBytes!:
    | number
    | null
  @Field(() => [Input], { description: 'Its inputs, from the task list; a combined-screen task has several.' })
  inputs!: Input[]
  // `recordings` is resolved by TaskRecordingsResolver, from the catalogue.
  @Field(() => [Thumbnail], { description: 'The latest thumbnails, newest first (at most 5).' })
  thumbnails!: Thumbnail[]
  @Field(() => [Resume], { description: 'Disconnects and resumes (type 15), oldest first.' }) resumes!: Resume[]
}

// Bounds on the lists a filter takes: far above a page, far below a statement's parameters.
export const MAX_FILTER_IDS = 500

@InputType('TaskFilter', { description: 'Which tasks to list or count; every condition given must hold.' })
export class TaskFilter {
  @Field(() => [ID], {
    nullable: true,
    description: `Any of these tasks, by global id (at most ${MAX_FILTER_IDS}). An empty list matches nothing.`,
  })
  ids?: string[] | null
  @Field(() => [String], {
    nullable: true,
    description: `Any of these tasks, by \`hashed_id\` (at most ${MAX_FILTER_IDS}). An empty list matches nothing.`,
  })
  taskIds?: string[] | null
  @Field(() => String, { nullable: true, description: 'Tasks of this service code, exactly.' }) serviceCode?:
    | string
    | null
  @Field(() => [TaskStatus], {
    nullable: true,
    description: 'Any of these statuses; an empty list matches every status.',
  })
  status?: Array<keyof typeof TaskStatus> | null
  @Field(() => String, {
    nullable: true,
    description:
      'Tasks whose user name starts with this text, ignoring the case of the letters A–Z (other characters must ' +
      "match exactly): what a search box expects. For one user's tasks exactly, use `userIds` or `User.tasks`.",
  })
  userName?: string | null
  @Field(() => [ID], {
    nullable: true,
    description:
      `Tasks started by any of these users, by global id (\`User.id\`), exactly: what a user page follows (at ` +
      `most ${MAX_FILTER_IDS}` +
      `). An empty list matches nothing.`,
  })
  userIds?: string[] | null
  @Field(() => String, { nullable: true, description: 'Tasks on this server (`vs_id`), exactly.' }) vsId?: string | null
  @Field(() => DateTimeScalar, { nullable: true, description: 'Started at or after this time.' })
  startedFrom?: Date | null
  @Field(() => DateTimeScalar, {
    nullable: true,
    description: 'Started before this time (the range is half-open: from ≤ startedAt < to).',
  })
  startedTo?: Date | null
}

@ObjectType('TaskConnection', { simpleResolvers: true, description: 'A page of tasks, newest start first.' })
export class TaskConnection extends ConnectionType('Task', () => Task) {}

@ObjectType('TaskCounts', {
  simpleResolvers: true,
  description: 'The tasks of one service code that match a filter, counted; viewers and bytes from the task list.',
})
export class TaskCounts {
  @Field(() => String, { description: 'The service code counted.' }) serviceCode!: string
  @Field(() => Int, { description: 'Tasks that are LIVE.' }) live!: number
  @Field(() => Int, { description: 'Tasks that are WAITING_RECONNECT.' }) waitingReconnect!: number
  @Field(() => Int, { description: 'Tasks that are ENDED.' }) ended!: number
  @Field(() => Int, { description: 'Every matching task.' }) total!: number
  @Field(() => Int, {
    description:
      'Concurrent HTTP live connections now: the sum of `Output.connections` over the tasks the latest task list ' +
      'answer lists.',
  })
  viewers!: number
  @Field(() => SafeIntScalar, {
    description:
      "Bytes sent through HTTP live: the sum of the task list's `http_output_bytes` over the tasks it lists now.",
  })
  outputBytes!: number
}
