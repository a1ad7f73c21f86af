import type { MediaFormatNode } from '../../../fold/graph.model.js'
import { Field, ID, Int, ObjectType, registerEnumType } from '../type-graphql.shim.js'
import { MediaFormat } from './media-format.type.js'
import { Node } from './node.type.js'
import { DateTimeScalar, SafeIntScalar } from './scalars.type.js'
import { Task } from './task.type.js'
import type { TaskView } from '../../../storage/tables/task.node.js'

/** `codec_type` of a stream. */
export const StreamKind = { VIDEO: 'VIDEO', AUDIO: 'AUDIO', UNKNOWN: 'UNKNOWN' } as const
registerEnumType(StreamKind, {
  name: 'StreamKind',
  description: 'What a stream carries (`codec_type`).',
  valuesConfig: {
    VIDEO: { description: '`codec_type` 0.' },
    AUDIO: { description: '`codec_type` 1.' },
    UNKNOWN: { description: 'Any other `codec_type`, or none sent.' },
  },
})

/** `copy` of a stream. */
export const CopyMode = { COPY: 'COPY', TRANSCODE: 'TRANSCODE' } as const
registerEnumType(CopyMode, {
  name: 'CopyMode',
  description: 'Whether a stream is passed through or transcoded (`copy`).',
  valuesConfig: {
    COPY: { description: '`copy` 1: the input stream is passed through.' },
    TRANSCODE: { description: 'Transcoded: the spec says `copy` 2, its samples 0; both read as TRANSCODE.' },
  },
})

@ObjectType('Stream', {
  simpleResolvers: true,
  description: 'One audio or video stream of an output, from the task list.',
})
export class Stream {
  @Field(() => Int, { nullable: true, description: 'Its position in the output (`index`).' }) index!: number | null
  @Field(() => StreamKind, { description: 'Video, audio, or UNKNOWN for a `codec_type` the service does not publish.' })
  kind!: keyof typeof StreamKind
  @Field(() => Int, { nullable: true, description: '`codec_id` as sent; the service does not publish the codec ids.' })
  codecId!: number | null
  @Field(() => Int, { nullable: true, description: 'Video width in pixels; null for audio.' }) width!: number | null
  @Field(() => Int, { nullable: true, description: 'Video height in pixels; null for audio.' }) height!: number | null
  @Field(() => CopyMode, { nullable: true, description: 'Passed through or transcoded; null when not sent.' })
  copyMode!: keyof typeof CopyMode | null
  @Field(() => SafeIntScalar, { nullable: true, description: 'Bits per second (`bit_rate`).' }) bitRate!: number | null
}

export interface OutputView {
  id: string
  task: TaskView
}

@ObjectType('Output', {
  simpleResolvers: true,
  implements: Node,
  description: 'One output format of a task, joined from the task list and the type 0, 1 and 2 notifications.',
})
export class Output extends Node implements OutputView {
  @Field(() => ID, {
    description:
      'An opaque global id (of the task, the tag and the container): the same across restarts and on every instance.',
  })
  declare id: string
  @Field(() => Task, { description: 'The task this output belongs to.' }) task!: TaskView
  @Field(() => Int, {
    nullable: true,
    description: '`output_idx` where a notification gave it, else the position in the task list.',
  })
  index!: number | null
  @Field(() => String, {
    nullable: true,
    description: 'The label of the output format configuration (`tag`); null when the service sent none.',
  })
  tag!: string | null
  @Field(() => MediaFormat, {
    nullable: true,
    description: 'Its format; null until the task list or a notification gives it.',
  })
  format!: MediaFormatNode | null
  @Field(() => String, { nullable: true, description: 'The live play address; plays from the newest point.' }) playUrl!:
    | string
    | null
  @Field(() => String, {
    nullable: true,
    description: '`svod_url`: the time-shift address, playing from the beginning while the live runs (flv only).',
  })
  timeShiftUrl!: string | null
  @Field(() => String, { nullable: true, description: 'The file it is written to (`file_name`, task list).' })
  fileName!: string | null
  @Field(() => String, {
    nullable: true,
    description: 'The directory it is written to, relative (`relative_dir`, task list).',
  })
  relativeDir!: string | null
  @Field(() => Int, { nullable: true, description: 'Video width in pixels.' }) width!: number | null
  @Field(() => Int, { nullable: true, description: 'Video height in pixels.' }) height!: number | null
  @Field(() => SafeIntScalar, {
    nullable: true,
    description: 'Bytes sent through HTTP live (flv); 0 for other formats.',
  })
  httpOutputBytes!: number | null
  @Field(() => Int, {
    nullable: true,
    description: 'Concurrent HTTP live connections (viewers, `http_connections_num`); 0 for hls.',
  })
  connections!: number | null
  @Field(() => [Stream], { description: 'Its audio and video streams, from the task list.' }) streams!: Stream[]
  @Field(() => DateTimeScalar, { nullable: true, description: 'When its live start (type 0) arrived.' })
  startedAt!: Date | null
  @Field(() => DateTimeScalar, { nullable: true, description: 'When its live end (type 1) arrived.' })
  endedAt!: Date | null
  // `recordings` is resolved by OutputRecordingsResolver, from the catalogue.
}
