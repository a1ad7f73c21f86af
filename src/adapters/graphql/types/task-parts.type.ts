import { Field, Float, Int, ObjectType } from '../type-graphql.shim.js'
import type { MediaFormatNode } from '../../../fold/graph.model.js'
import { MediaFormat } from './media-format.type.js'
import { ResumeStatus } from './notification.enums.js'
import { DateTimeScalar, SafeIntScalar } from './scalars.type.js'

@ObjectType('Recording', { simpleResolvers: true, description: 'An archived (on-demand) file of a task, from its type 2 notification.' })
export class Recording {
  @Field(() => Int, { nullable: true, description: '`output_idx`: the output it was recorded from.' }) outputIndex!: number | null
  @Field(() => String, { nullable: true, description: 'The label of the output format it was recorded from (`tag`).' }) tag!: string | null
  @Field(() => String, { nullable: true, name: 'playUrl', simple: false, description: 'The on-demand play address (`url`).' }) url!: string | null
  @Field(() => String, { nullable: true, description: 'Where the file is saved, relative (`path`).' }) path!: string | null
  @Field(() => String, { nullable: true, description: 'The file name (`file_name`).' }) fileName!: string | null
  @Field(() => MediaFormat, { nullable: true, description: 'Its format (`format`).' }) format!: MediaFormatNode | null
  @Field(() => Int, { nullable: true, description: 'Video width in pixels (the first number of `size`).' }) width!: number | null
  @Field(() => Int, { nullable: true, description: 'Video height in pixels (the second number of `size`).' }) height!: number | null
  @Field(() => Float, { nullable: true, description: 'Its duration as the service gives it (`duration`); its unit is not published.' }) duration!: number | null
  @Field(() => SafeIntScalar, { nullable: true, description: 'Bytes of input of the live (`input_bytes`).' }) inputBytes!: number | null
  @Field(() => SafeIntScalar, { nullable: true, description: 'Bytes sent through HTTP live (`http_output_bytes`).' }) httpOutputBytes!: number | null
  @Field(() => DateTimeScalar, { nullable: true, description: "The live start by the service's clock (`created_at`)." }) createdAt!: Date | null
  @Field(() => DateTimeScalar, { description: 'When livegate received its notification.' }) receivedAt!: Date
}

/** What an `Output` resolves from: the fold's output with its id and the task it belongs to. */
@ObjectType('Input', { simpleResolvers: true, description: 'A task input from the task list; a combined-screen task has several.' })
export class Input {
  @Field(() => String, { nullable: true, name: 'sourceUrl', simple: false, description: "The address the input is pulled from (`url`); empty for the service's own tcp upload." }) url!: string | null
  @Field(() => String, { nullable: true, description: 'The service code of the input (`service_code`).' }) serviceCode!: string | null
  @Field(() => String, { nullable: true, description: 'The user sending the input (`user_name`).' }) userName!: string | null
  @Field(() => String, { nullable: true, description: 'The device type (`device_type`), as text like `User.deviceType`.' }) deviceType!: string | null
  @Field(() => String, { nullable: true, description: 'The device version (`device_version`).' }) deviceVersion!: string | null
}

@ObjectType('Thumbnail', { simpleResolvers: true, description: 'A thumbnail picture of a task, from its type 9 notification.' })
export class Thumbnail {
  @Field(() => String, { nullable: true, name: 'imageUrl', simple: false, description: "The picture's download address (`url`)." }) url!: string | null
  @Field(() => String, { nullable: true, description: 'Where the picture is saved, relative (`path`).' }) path!: string | null
  @Field(() => String, { nullable: true, description: "The picture's file name (`file_name`)." }) fileName!: string | null
  @Field(() => Int, { nullable: true, description: 'Picture width in pixels.' }) width!: number | null
  @Field(() => Int, { nullable: true, description: 'Picture height in pixels.' }) height!: number | null
  @Field(() => DateTimeScalar, { description: 'When livegate received its notification.' }) receivedAt!: Date
}

@ObjectType('Resume', { simpleResolvers: true, description: 'A live resume notification (type 15): a wait for a reconnect, or the resume.' })
export class Resume {
  @Field(() => ResumeStatus, { description: 'Waiting for the client, or resumed.' }) status!: keyof typeof ResumeStatus
  @Field(() => DateTimeScalar, { name: 'sentAt', simple: false, description: 'When the service sent it, by its clock (the signed timestamp).' }) at!: Date
}
