import { Field, Float, InputType, Int, ObjectType } from '../type-graphql.shim.js'
import { ConnectionType } from './connection.type.js'
import { Node } from './node.type.js'
import { DisconnectReason } from './notification.enums.js'
import { Resume } from './task-parts.type.js'
import { DateTimeScalar } from './scalars.type.js'

@ObjectType('Disconnect', { simpleResolvers: true, description: 'A mobile client disconnect (type 8).' })
export class Disconnect {
  @Field(() => DisconnectReason, {
    nullable: true,
    description: 'Why it disconnected; null for a code the service does not publish (see reasonCode).',
  })
  reason!: keyof typeof DisconnectReason | null
  @Field(() => Int, { nullable: true, description: '`disconnect_reason` as sent.' }) reasonCode!: number | null
  @Field(() => Float, {
    nullable: true,
    description: 'Online time on one connection (`session_duration`); its unit is not published.',
  })
  sessionDuration!: number | null
  @Field(() => DateTimeScalar, {
    name: 'sentAt',
    simple: false,
    description: 'When the service sent it, by its clock (the signed timestamp).',
  })
  at!: Date
}

// `id` and `tasks` are resolved by UserResolver.
@ObjectType('User', {
  simpleResolvers: true,
  implements: Node,
  description: "A user of a service code: the task list's users, and the users notifications name.",
})
export class User extends Node {
  @Field(() => String, { description: 'The service code the user belongs to.' }) serviceCode!: string
  @Field(() => String, {
    description: 'The user name (`user_name`, `author` or `username`); unique within its service code.',
  })
  userName!: string
  @Field(() => String, { nullable: true, description: 'The server the user is on (`vs_id`).' }) vsId!: string | null
  @Field(() => String, { nullable: true, description: 'The client version (`client_version`, task list).' })
  clientVersion!: string | null
  @Field(() => String, { nullable: true, description: 'The device type (`device_type`, task list).' }) deviceType!:
    | string
    | null
  @Field(() => Boolean, { description: 'Listed by the latest successful task list answer.' }) online!: boolean
  @Field(() => DateTimeScalar, { nullable: true, description: 'First listed by the task list.' })
  firstSeenAt!: Date | null
  @Field(() => DateTimeScalar, { nullable: true, description: 'Last listed by the task list.' })
  lastSeenAt!: Date | null
  @Field(() => [Disconnect], { description: 'The latest disconnects (type 8), oldest first.' })
  disconnects!: Disconnect[]
  @Field(() => [Resume], { description: 'The latest disconnects and resumes of their lives (type 15), oldest first.' })
  resumes!: Resume[]
}

@InputType('UserFilter', { description: 'Which users to list; every condition given must hold.' })
export class UserFilter {
  @Field(() => String, { nullable: true, description: 'Users of this service code, exactly.' }) serviceCode?:
    | string
    | null
  @Field(() => String, {
    nullable: true,
    description:
      'Users whose name starts with this text, ignoring the case of the letters A–Z (other characters must match ' +
      'exactly): what a search box expects.',
  })
  userName?: string | null
  @Field(() => Boolean, {
    nullable: true,
    description: 'Only users the latest task list answer lists (true), or only those it does not (false).',
  })
  online?: boolean | null
}

@ObjectType('UserConnection', { simpleResolvers: true, description: 'A page of users, most recently known first.' })
export class UserConnection extends ConnectionType('User', () => User) {}
