import { Field, InputType, Int } from '../type-graphql.shim.js'
import { DateTimeScalar } from './scalars.type.js'

/** Which notifications `notifications` lists; every criterion given must hold. */
@InputType('NotificationFilter', { description: 'Which notifications to list; every criterion given must hold.' })
export class NotificationFilter {
  @Field(() => String, { nullable: true })
  serviceCode?: string | null

  @Field(() => [Int], { nullable: true, description: 'Any of these `type` values. An empty list matches nothing.' })
  types?: number[] | null

  @Field(() => String, { nullable: true, description: 'The task (`hashed_id`).' })
  taskId?: string | null

  @Field(() => String, { nullable: true, description: 'The user (`author` or `username`).' })
  userName?: string | null

  @Field(() => DateTimeScalar, { nullable: true, description: 'Received at or after this time.' })
  receivedFrom?: Date | null

  @Field(() => DateTimeScalar, { nullable: true, description: 'Received before this time (the range is half-open: from ≤ receivedAt < to).' })
  receivedTo?: Date | null
}
