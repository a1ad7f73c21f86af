import type { MediaFormatNode } from '../../../fold/graph.model.js'
import { Field, Float, InputType, Int, ObjectType, registerEnumType } from '../type-graphql.shim.js'
import { ConnectionType } from './connection.type.js'
import { Node } from './node.type.js'
import { Task } from './task.type.js'
import { MediaFormat } from './media-format.type.js'
import { DateTimeScalar, SafeIntScalar } from './scalars.type.js'

/** Where livegate learnt of a recording. */
export const RecordingSource = { CALLBACK: 'CALLBACK', FILE_LIST: 'FILE_LIST' } as const
registerEnumType(RecordingSource, {
  name: 'RecordingSource',
  description: 'A channel the cloud told of a recording through.',
  valuesConfig: {
    CALLBACK: { description: 'A type 2 (archived) notification named the file.' },
    FILE_LIST: { description: "The cloud's archive (`list_files`) lists the file." },
  },
})

// `id` and `task` are resolved by RecordingResolver.
@ObjectType('Recording', {
  simpleResolvers: true,
  implements: Node,
  description:
    "A recorded file of a service code in livegate's catalogue: one per file, whichever channel told it first (a " +
    "type 2 notification or the cloud's `list_files`).",
})
export class Recording extends Node {
  @Field(() => String, { description: 'The service code the file belongs to.' }) serviceCode!: string
  @Field(() => String, { description: 'The file name (`file_name`): unique within its service code.' })
  fileName!: string
  @Field(() => String, { nullable: true, description: "The task's `hashed_id`, when it is known (see `task`)." })
  taskId!: string | null
  @Field(() => String, { nullable: true, description: "The broadcaster (`user_name`, or the task's `author`)." })
  userName!: string | null
  @Field(() => String, { nullable: true, description: 'The on-demand play address (`url`).' }) playUrl!: string | null
  @Field(() => String, { nullable: true, description: 'Free text from the list (`description`), often empty.' })
  description!: string | null
  @Field(() => String, { nullable: true, description: 'Where it was recorded, free text from the list (`location`).' })
  location!: string | null
  @Field(() => Float, { nullable: true, description: 'Its duration as the cloud gives it; its unit is not published.' })
  duration!: number | null
  @Field(() => Int, { nullable: true, description: 'Video width in pixels.' }) width!: number | null
  @Field(() => Int, { nullable: true, description: 'Video height in pixels.' }) height!: number | null
  @Field(() => Int, {
    nullable: true,
    description: "How many times it was watched (`access_cnt`), as the list's latest answer says.",
  })
  views!: number | null
  @Field(() => Int, {
    nullable: true,
    description: "How many likes it has (`zan_cnt`), as the list's latest answer says.",
  })
  likes!: number | null
  @Field(() => DateTimeScalar, {
    nullable: true,
    description:
      "When it was recorded: the list's `created_at`, else the type 2's (the live start by the cloud's clock).",
  })
  createdAt!: Date | null
  @Field(() => Int, { nullable: true, description: '`output_idx`: the output it was recorded from (type 2).' })
  outputIndex!: number | null
  @Field(() => String, {
    nullable: true,
    description: 'The label of the output format it was recorded from (`tag`, type 2).',
  })
  tag!: string | null
  @Field(() => String, { nullable: true, description: 'Where the file is saved, relative (`path`, type 2).' }) path!:
    | string
    | null
  @Field(() => MediaFormat, { nullable: true, description: 'Its format (`format`, type 2).' })
  format!: MediaFormatNode | null
  @Field(() => SafeIntScalar, { nullable: true, description: 'Bytes of input of the live (`input_bytes`, type 2).' })
  inputBytes!: number | null
  @Field(() => SafeIntScalar, {
    nullable: true,
    description: 'Bytes sent through HTTP live (`http_output_bytes`, type 2).',
  })
  httpOutputBytes!: number | null
  @Field(() => DateTimeScalar, {
    nullable: true,
    description: 'When livegate received its type 2 notification; null for a file only the list names.',
  })
  receivedAt!: Date | null
  @Field(() => DateTimeScalar, { description: 'When livegate first learnt of it, through either channel.' })
  firstSeenAt!: Date
  @Field(() => [RecordingSource], {
    description: 'The channels that told of it: a file only listed was never announced by a type 2.',
  })
  seenIn!: Array<keyof typeof RecordingSource>
}

@InputType('RecordingFilter', { description: 'Which recordings to list; every condition given must hold.' })
export class RecordingFilter {
  @Field(() => String, { nullable: true, description: 'Recordings of this service code, exactly.' }) serviceCode?:
    | string
    | null
  @Field(() => String, { nullable: true, description: 'Recordings of this user, exactly.' }) userName?: string | null
  @Field(() => String, { nullable: true, description: 'Recordings of the task with this global id (`Task.id`).' })
  task?: string | null
  @Field(() => [RecordingSource], {
    nullable: true,
    description: 'Seen in any of these channels; an empty list matches every recording.',
  })
  seenIn?: Array<keyof typeof RecordingSource> | null
  @Field(() => DateTimeScalar, { nullable: true, description: 'Recorded (else first seen) at or after this time.' })
  createdAfter?: Date | null
  @Field(() => DateTimeScalar, { nullable: true, description: 'Recorded (else first seen) before this time.' })
  createdBefore?: Date | null
}

@ObjectType('RecordingConnection', { simpleResolvers: true, description: 'A page of recordings, newest first.' })
export class RecordingConnection extends ConnectionType('Recording', () => Recording) {}

@ObjectType('MissingRecording', {
  simpleResolvers: true,
  description: 'A task that ended with `live_only` 0 and no recording after `archive.graceMs` (`recording.missing`).',
})
export class MissingRecording {
  @Field(() => Task, { description: 'The task, as it is now: a recording may have come since.' }) task!: unknown
  @Field(() => DateTimeScalar, { description: 'When livegate decided it was missing.' }) toldAt!: Date
}
