import { type CallbackKind, KIND_ENTRIES } from '../../../model/callback.kinds.js'
import { registerEnumType } from '../type-graphql.shim.js'

/**
 * The enums of the notification values. Their values are the same strings as the graph model's
 * (`DisconnectReason`, `ResumeNode.status` in src/fold/graph.model.ts), so the task and user
 * types can expose the folded values through the same GraphQL enums.
 */

/** Type 8 `disconnect_reason`, by its published code. */
export const DisconnectReason = {
  NETWORK_TIMEOUT: 'NETWORK_TIMEOUT',
  CLIENT_CLOSED: 'CLIENT_CLOSED',
  PROTOCOL_ERROR: 'PROTOCOL_ERROR',
} as const
export type DisconnectReason = (typeof DisconnectReason)[keyof typeof DisconnectReason]

registerEnumType(DisconnectReason, {
  name: 'DisconnectReason',
  description: 'Why a mobile client disconnected (`disconnect_reason` of a type 8 notification).',
  valuesConfig: {
    NETWORK_TIMEOUT: { description: '0: the network timed out.' },
    CLIENT_CLOSED: { description: '1: a server read error; generally the client disconnected on its own.' },
    PROTOCOL_ERROR: { description: '2: a protocol error; the server disconnected the client.' },
  },
})

/** Type 15 `status`. */
export const ResumeStatus = {
  WAITING: 'WAITING',
  RESUMED: 'RESUMED',
} as const
export type ResumeStatus = (typeof ResumeStatus)[keyof typeof ResumeStatus]

registerEnumType(ResumeStatus, {
  name: 'ResumeStatus',
  description: 'Where a live resume stands (`status` of a type 15 notification).',
  valuesConfig: {
    WAITING: { description: '0: an abnormal client disconnect was detected; waiting for the client to reconnect.' },
    RESUMED: { description: '1: the client reconnected; the live resumed.' },
  },
})

/** What a notification is about, by its `type`: the kinds table's names, and UNKNOWN. */
export const NotificationKind = Object.fromEntries([
  ...KIND_ENTRIES.map(([kind]) => [kind, kind]),
  ['UNKNOWN', 'UNKNOWN'],
]) as { readonly [K in CallbackKind]: K }
export type NotificationKind = CallbackKind

registerEnumType(NotificationKind, {
  name: 'NotificationKind',
  description:
    'What a notification is about, named for its `type` number; filter by it with `NotificationFilter.kinds`.',
  valuesConfig: {
    ...Object.fromEntries(KIND_ENTRIES.map(([kind, entry]) => [kind, { description: entry.summary }])),
    UNKNOWN: {
      description:
        'Any type the service does not publish (such as the m3u8 slice notification); `type` and `fields` hold ' +
        'what was sent.',
    },
  },
})
