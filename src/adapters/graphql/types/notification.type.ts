import { callbackKind, type CallbackKind, KIND_ENTRIES, type KnownKind } from '../../../model/callback.kinds.js'
import { Field, ID, Int, InterfaceType, ObjectType } from '../type-graphql.shim.js'
import { ConnectionType } from './connection.type.js'
import { Node } from './node.type.js'
import { NotificationKind } from './notification.enums.js'
import { DateTimeScalar, JSONScalar } from './scalars.type.js'

/** The GraphQL object type of each notification kind, from the kinds table. */
export const NOTIFICATION_TYPE_NAMES: Readonly<Record<CallbackKind, string>> = {
  ...(Object.fromEntries(KIND_ENTRIES.map(([kind, entry]) => [kind, entry.graphqlType])) as Record<KnownKind, string>),
  UNKNOWN: 'UnknownNotification',
}

/** The object type of a notification value: the `resolveType` of `Notification`. */
export function notificationTypeName(value: { type: number }): string {
  return NOTIFICATION_TYPE_NAMES[callbackKind(value.type)]
}

/**
 * What every stored notification callback exposes. The typed values of each kind are on its
 * object type; `fields` keeps everything exactly as sent, for what no typed field covers.
 */
@InterfaceType('Notification', {
  description:
    'A notification callback the service sent and livegate kept, newest first in `notifications`. Each kind is ' +
    'an object type with its typed values; `fields` keeps everything as sent.',
  implements: Node,
  resolveType: notificationTypeName,
})
export abstract class Notification extends Node {
  @Field(() => ID, {
    description:
      'An opaque global id (of the stored callback): the same across restarts and on every instance; pass it to ' +
      '`node(id:)`.',
  })
  declare id: string

  @Field(() => NotificationKind, {
    description:
      'What the notification is about, by its `type`; UNKNOWN for a type the service does not publish (read ' +
      '`type` and `fields`).',
  })
  kind!: NotificationKind

  @Field(() => Int, {
    description:
      'The `type` field as sent: 0 live start, 1 live end, 2 archived, 8 client disconnect, 9 thumbnail, 15 live ' +
      'resume; any other is of kind UNKNOWN.',
  })
  type!: number

  @Field(() => String, { description: 'The service code the callback was sent for.' })
  serviceCode!: string

  @Field(() => String, { nullable: true, description: 'The server the task or user is on (`vs_id`).' })
  vsId!: string | null

  @Field(() => String, {
    nullable: true,
    description: 'The task it is about (`hashed_id`); null when the callback names none. The task itself is `task`.',
  })
  taskId!: string | null

  @Field(() => String, {
    nullable: true,
    description:
      'The user it is about (`author` or `username`), exactly as sent; null when the callback names none. The ' +
      'user itself is `user`.',
  })
  userName!: string | null

  @Field(() => DateTimeScalar, { description: 'When livegate first received it.' })
  receivedAt!: Date

  @Field(() => Int, { description: 'How many times the service delivered this same callback.' })
  deliveries!: number

  @Field(() => Boolean, {
    description:
      'Whether its signature was checked and matched (false when the service is configured with verify "log" or ' +
      '"off").',
  })
  signatureVerified!: boolean

  @Field(() => JSONScalar, {
    description:
      'Every form field exactly as sent, by name; a name sent more than once holds a list of its values in order.',
  })
  fields!: Record<string, string | string[]>

  @Field(() => String, {
    description: 'Where this notification sits in the newest-first list: pass as `after` to read on from here.',
  })
  cursor!: string
}

/** A notification of a type the service does not publish (such as the m3u8 slice notification). */
@ObjectType(NOTIFICATION_TYPE_NAMES.UNKNOWN, {
  simpleResolvers: true,
  implements: Notification,
  description: 'A notification of a type livegate does not know; its values are in `fields`.',
})
export class UnknownNotification extends Notification {}

/** `notifications`' connection type. */
@ObjectType('NotificationConnection', { simpleResolvers: true, description: 'A page of notifications, newest first.' })
export class NotificationConnection extends ConnectionType('Notification', () => Notification) {}
