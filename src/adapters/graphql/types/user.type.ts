import { Field, InputType, Int, ObjectType } from '../type-graphql.shim.js'
import { ConnectionType } from './connection.type.js'
import { DisconnectReason } from './notification.enums.js'
import { Resume } from './output.type.js'
import { DateTimeScalar } from './scalars.type.js'

@ObjectType('Disconnect', { simpleResolvers: true, description: 'A mobile client disconnect (type 8).' })
export class Disconnect {
  @Field(() => DisconnectReason, { nullable: true }) reason!: keyof typeof DisconnectReason | null
  @Field(() => Int, { nullable: true, description: '`disconnect_reason` as sent.' }) reasonCode!: number | null
  @Field(() => Number, { nullable: true, description: 'Online time on one connection; its unit is not published.' }) sessionDuration!: number | null
  @Field(() => DateTimeScalar) at!: Date
}

@ObjectType('User', { simpleResolvers: true, description: 'A user of a service code: the task list\'s users, and the users notifications name.' })
export class User {
  @Field(() => String) serviceCode!: string
  @Field(() => String) userName!: string
  @Field(() => String, { nullable: true }) vsId!: string | null
  @Field(() => String, { nullable: true }) clientVersion!: string | null
  @Field(() => String, { nullable: true }) deviceType!: string | null
  @Field(() => Boolean, { description: 'Listed by the latest successful task list answer.' }) online!: boolean
  @Field(() => DateTimeScalar, { nullable: true }) firstSeenAt!: Date | null
  @Field(() => DateTimeScalar, { nullable: true }) lastSeenAt!: Date | null
  @Field(() => [Disconnect], { description: 'The latest disconnects, oldest first.' }) disconnects!: Disconnect[]
  @Field(() => [Resume]) resumes!: Resume[]
}

@InputType('UserFilter', { description: 'Every given condition must hold.' })
export class UserFilter {
  @Field(() => String, { nullable: true }) serviceCode?: string | null
  @Field(() => String, { nullable: true }) userName?: string | null
  @Field(() => Boolean, { nullable: true }) online?: boolean | null
}

@ObjectType('UserConnection', { simpleResolvers: true, description: 'Users, most recently known first.' })
export class UserConnection extends ConnectionType('User', () => User) {}
