import { Field, Int, ObjectType, registerEnumType } from '../type-graphql.shim.js'
import { MediaFormat } from './media-format.type.js'
import { ResumeStatus } from './notification.enums.js'
import { DateTimeScalar, SafeIntScalar } from './scalars.type.js'

/** `codec_type` of a stream. */
export const StreamKind = { VIDEO: 'VIDEO', AUDIO: 'AUDIO' } as const
registerEnumType(StreamKind, { name: 'StreamKind', description: '`codec_type`: 0 video, 1 audio.' })

/** `copy` of a stream. */
export const CopyMode = { COPY: 'COPY', TRANSCODE: 'TRANSCODE' } as const
registerEnumType(CopyMode, {
  name: 'CopyMode',
  description: '`copy`: 1 passes the input stream through; the spec says 2, its samples 0, for transcoding; both read as TRANSCODE.',
})

@ObjectType('Stream', { simpleResolvers: true, description: 'One audio or video stream of an output, from the task list.' })
export class Stream {
  @Field(() => Int, { nullable: true }) index!: number | null
  @Field(() => StreamKind, { nullable: true }) kind!: keyof typeof StreamKind | null
  @Field(() => Int, { nullable: true, description: 'The service does not publish the codec ids.' }) codecId!: number | null
  @Field(() => Int, { nullable: true, description: '0 for audio.' }) width!: number | null
  @Field(() => Int, { nullable: true, description: '0 for audio.' }) height!: number | null
  @Field(() => CopyMode, { nullable: true }) copyMode!: keyof typeof CopyMode | null
  @Field(() => SafeIntScalar, { nullable: true, description: 'Bits per second.' }) bitRate!: number | null
}

@ObjectType('Recording', { simpleResolvers: true, description: 'An archived file (type 2).' })
export class Recording {
  @Field(() => Int, { nullable: true, description: '`output_idx`: the output it was recorded from.' }) outputIndex!: number | null
  @Field(() => String, { nullable: true }) tag!: string | null
  @Field(() => String, { nullable: true, description: 'The on-demand play address.' }) url!: string | null
  @Field(() => String, { nullable: true }) path!: string | null
  @Field(() => String, { nullable: true }) fileName!: string | null
  @Field(() => MediaFormat, { nullable: true }) format!: MediaFormat | null
  @Field(() => Int, { nullable: true }) width!: number | null
  @Field(() => Int, { nullable: true }) height!: number | null
  @Field(() => Number, { nullable: true, description: 'As the service gives it; its unit is not published.' }) duration!: number | null
  @Field(() => SafeIntScalar, { nullable: true }) inputBytes!: number | null
  @Field(() => SafeIntScalar, { nullable: true }) httpOutputBytes!: number | null
  @Field(() => DateTimeScalar, { nullable: true, description: 'The live start (`created_at`).' }) createdAt!: Date | null
  @Field(() => DateTimeScalar) receivedAt!: Date
}

@ObjectType('Output', { simpleResolvers: true, description: 'One output format of a task, joined from the task list and the type 0, 1 and 2 notifications.' })
export class Output {
  @Field(() => Int, { nullable: true, description: '`output_idx` where a notification gave it, else the position in the task list.' })
  index!: number | null
  @Field(() => String, { nullable: true, description: 'The label of the output format configuration.' }) tag!: string | null
  @Field(() => MediaFormat, { nullable: true }) format!: MediaFormat | null
  @Field(() => String, { nullable: true, description: 'The live play address; plays from the newest point.' }) playUrl!: string | null
  @Field(() => String, { nullable: true, description: '`svod_url`: the time-shift address, playing from the beginning while the live runs (flv only).' })
  timeShiftUrl!: string | null
  @Field(() => String, { nullable: true }) fileName!: string | null
  @Field(() => String, { nullable: true }) relativeDir!: string | null
  @Field(() => Int, { nullable: true }) width!: number | null
  @Field(() => Int, { nullable: true }) height!: number | null
  @Field(() => SafeIntScalar, { nullable: true, description: 'Bytes sent through HTTP live (flv); 0 for other formats.' }) httpOutputBytes!: number | null
  @Field(() => Int, { nullable: true, description: 'Concurrent HTTP live connections; 0 for hls.' }) connections!: number | null
  @Field(() => [Stream]) streams!: Stream[]
  @Field(() => DateTimeScalar, { nullable: true, description: 'When its live start (type 0) arrived.' }) startedAt!: Date | null
  @Field(() => DateTimeScalar, { nullable: true, description: 'When its live end (type 1) arrived.' }) endedAt!: Date | null
  @Field(() => [Recording]) recordings!: Recording[]
}

@ObjectType('Input', { simpleResolvers: true, description: 'A task input from the task list; a combined-screen task has several.' })
export class Input {
  @Field(() => String, { nullable: true, description: 'Empty for the service\'s own tcp upload.' }) url!: string | null
  @Field(() => String, { nullable: true }) serviceCode!: string | null
  @Field(() => String, { nullable: true }) userName!: string | null
  @Field(() => Int, { nullable: true }) deviceType!: number | null
  @Field(() => String, { nullable: true }) deviceVersion!: string | null
}

@ObjectType('Thumbnail', { simpleResolvers: true, description: 'A thumbnail (type 9).' })
export class Thumbnail {
  @Field(() => String, { nullable: true }) url!: string | null
  @Field(() => String, { nullable: true }) path!: string | null
  @Field(() => String, { nullable: true }) fileName!: string | null
  @Field(() => Int, { nullable: true }) width!: number | null
  @Field(() => Int, { nullable: true }) height!: number | null
  @Field(() => DateTimeScalar) receivedAt!: Date
}

@ObjectType('Resume', { simpleResolvers: true, description: 'A live resume notification (type 15).' })
export class Resume {
  @Field(() => ResumeStatus) status!: keyof typeof ResumeStatus
  @Field(() => DateTimeScalar, { description: 'By the service\'s clock (the signed timestamp).' }) at!: Date
}
