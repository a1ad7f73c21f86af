import type { CallbackKind } from '../../../model/callback.parse.js'
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

/** What a notification is about, by its `type`: the model's CallbackKind names. */
export const NotificationKind = {
  LIVE_START: 'LIVE_START',
  LIVE_END: 'LIVE_END',
  ARCHIVED: 'ARCHIVED',
  CLIENT_DISCONNECT: 'CLIENT_DISCONNECT',
  THUMBNAIL: 'THUMBNAIL',
  LIVE_RESUME: 'LIVE_RESUME',
  UNKNOWN: 'UNKNOWN',
} as const satisfies Record<CallbackKind, CallbackKind>
export type NotificationKind = (typeof NotificationKind)[keyof typeof NotificationKind]

registerEnumType(NotificationKind, {
  name: 'NotificationKind',
  description: 'What a notification is about, named for its `type` number; filter by it with `NotificationFilter.kinds`.',
  valuesConfig: {
    LIVE_START: { description: 'Type 0: an output format of a live became playable.' },
    LIVE_END: { description: 'Type 1: a live ended.' },
    ARCHIVED: { description: 'Type 2: an archived (on-demand) file is ready.' },
    CLIENT_DISCONNECT: { description: 'Type 8: a mobile client disconnected.' },
    THUMBNAIL: { description: 'Type 9: a thumbnail was taken.' },
    LIVE_RESUME: { description: 'Type 15: a live waits for its client to reconnect, or resumed.' },
    UNKNOWN: { description: 'Any type the service does not publish (such as the m3u8 slice notification); `type` and `fields` hold what was sent.' },
  },
})
