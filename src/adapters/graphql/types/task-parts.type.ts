import { Field, Int, ObjectType } from '../type-graphql.shim.js'
import { ResumeStatus } from './notification.enums.js'
import { DateTimeScalar } from './scalars.type.js'

/** What an `Output` resolves from: the fold's output with its id and the task it belongs to. */
@ObjectType('Input', {
  simpleResolvers: true,
  description: 'A task input from the task list; a combined-screen task has several.',
})
export class Input {
  @Field(() => String, {
    nullable: true,
    name: 'sourceUrl',
    simple: false,
    description: "The address the input is pulled from (`url`); empty for the service's own tcp upload.",
  })
  url!: string | null
  @Field(() => String, { nullable: true, description: 'The service code of the input (`service_code`).' }) serviceCode!:
    | string
    | null
  @Field(() => String, { nullable: true, description: 'The user sending the input (`user_name`).' }) userName!:
    | string
    | null
  @Field(() => String, {
    nullable: true,
    description: 'The device type (`device_type`), as text like `User.deviceType`.',
  })
  deviceType!: string | null
  @Field(() => String, { nullable: true, description: 'The device version (`device_version`).' }) deviceVersion!:
    | string
    | null
}

@ObjectType('Thumbnail', {
  simpleResolvers: true,
  description: 'A thumbnail picture of a task, from its type 9 notification.',
})
export class Thumbnail {
  @Field(() => String, {
    nullable: true,
    name: 'imageUrl',
    simple: false,
    description: "The picture's download address (`url`).",
  })
  url!: string | null
  @Field(() => String, { nullable: true, description: 'Where the picture is saved, relative (`path`).' }) path!:
    | string
    | null
  @Field(() => String, { nullable: true, description: "The picture's file name (`file_name`)." }) fileName!:
    | string
    | null
  @Field(() => Int, { nullable: true, description: 'Picture width in pixels.' }) width!: number | null
  @Field(() => Int, { nullable: true, description: 'Picture height in pixels.' }) height!: number | null
  @Field(() => DateTimeScalar, { description: 'When livegate received its notification.' }) receivedAt!: Date
}

@ObjectType('Resume', {
  simpleResolvers: true,
  description: 'A live resume notification (type 15): a wait for a reconnect, or the resume.',
})
export class Resume {
  @Field(() => ResumeStatus, { description: 'Waiting for the client, or resumed.' }) status!: keyof typeof ResumeStatus
  @Field(() => DateTimeScalar, {
    name: 'sentAt',
    simple: false,
    description: 'When the service sent it, by its clock (the signed timestamp).',
  })
  at!: Date
}
