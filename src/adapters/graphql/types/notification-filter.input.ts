import { Field, InputType, Int } from '../type-graphql.shim.js'
import { NotificationKind } from './notification.enums.js'
import { DateTimeScalar } from './scalars.type.js'
import { MAX_FILTER_IDS } from './task.type.js'

/** Which notifications `notifications` lists; every criterion given must hold. */
@InputType('NotificationFilter', {
  description: 'Which notifications to list or receive; every criterion given must hold.',
})
export class NotificationFilter {
  @Field(() => String, { nullable: true, description: 'Notifications for this service code, exactly.' })
  serviceCode?: string | null

  @Field(() => [NotificationKind], {
    nullable: true,
    description: 'Any of these kinds (UNKNOWN: any type the service does not publish). An empty list matches nothing.',
  })
  kinds?: NotificationKind[] | null

  @Field(() => [Int], {
    nullable: true,
    description: 'Any of these `type` numbers, for a type with no kind of its own. An empty list matches nothing.',
  })
  types?: number[] | null

  @Field(() => [String], {
    nullable: true,
    description:
      `About any of these tasks, by \`hashed_id\` (at most ${MAX_FILTER_IDS}). ` + 'An empty list matches nothing.',
  })
  taskIds?: string[] | null

  @Field(() => String, {
    nullable: true,
    description:
      'About this user, exactly as the callback names them (`author` or `username`), case included: what a user ' +
      'page subscribes to.',
  })
  userName?: string | null

  @Field(() => DateTimeScalar, { nullable: true, description: 'Received at or after this time.' })
  receivedFrom?: Date | null

  @Field(() => DateTimeScalar, {
    nullable: true,
    description: 'Received before this time (the range is half-open: from ≤ receivedAt < to).',
  })
  receivedTo?: Date | null
}
