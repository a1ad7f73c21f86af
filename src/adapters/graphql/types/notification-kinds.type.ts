import { KIND_ENTRIES, type ViewType } from '../../../model/callback.kinds.js'
import { Field, Float, Int, ObjectType } from '../type-graphql.shim.js'
import { MediaFormat } from './media-format.type.js'
import { DisconnectReason, ResumeStatus } from './notification.enums.js'
import { Notification } from './notification.type.js'
import { DateTimeScalar, SafeIntScalar } from './scalars.type.js'

/**
 * One object type per published notification kind, with its typed values, built from the kinds
 * table (model/callback.kinds.ts): a kind's fields are declared there once. Every typed value is
 * nullable: the service may leave a field out, or send it in a form livegate cannot read, and
 * the notification is kept either way (the value as sent stays in `fields`).
 */

const GRAPHQL_TYPES: Readonly<Record<ViewType, () => object>> = {
  String: () => String,
  Int: () => Int,
  Float: () => Float,
  Boolean: () => Boolean,
  SafeInt: () => SafeIntScalar,
  DateTime: () => DateTimeScalar,
  MediaFormat: () => MediaFormat,
  DisconnectReason: () => DisconnectReason,
  ResumeStatus: () => ResumeStatus,
}

/** The object type of each published kind, by its GraphQL name. */
export const NOTIFICATION_KIND_TYPES: ReadonlyMap<string, Function> = new Map(
  KIND_ENTRIES.map(([, entry]) => {
    // A class of the kind's own name, so that type-graphql's messages name it.
    const type = { [entry.graphqlType]: class extends Notification {} }[entry.graphqlType] as Function
    for (const [name, field] of Object.entries(entry.view)) {
      Field(GRAPHQL_TYPES[field.as], { nullable: true, description: field.description })(type.prototype, name)
    }
    ObjectType(entry.graphqlType, { simpleResolvers: true, implements: Notification, description: entry.description })(
      type,
    )
    return [entry.graphqlType, type]
  }),
)
