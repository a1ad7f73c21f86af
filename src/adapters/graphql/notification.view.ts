import type { NotificationRow } from '../../storage/notification.queries.js'
import { sentFields } from '../../model/callback.record.js'
import type {
  ArchivedNotification,
  ClientDisconnectNotification,
  LiveEndNotification,
  LiveResumeNotification,
  LiveStartNotification,
  ThumbnailNotification,
} from './types/notification-kinds.type.js'
import { DISCONNECT_REASON_BY_CODE, RESUME_STATUS_BY_CODE } from '../../fold/graph.model.js'
import { toGlobalId } from './global.id.js'
import { logPositionCursor } from './pagination.js'
import { type Notification, type UnknownNotification, notificationKind } from './types/notification.type.js'

/** What a `Notification` resolves from: plain data with the GraphQL field names of its kind. */
export type NotificationNode =
  | LiveStartNotification
  | LiveEndNotification
  | ArchivedNotification
  | ThumbnailNotification
  | ClientDisconnectNotification
  | LiveResumeNotification
  | UnknownNotification

/**
 * The cursor of a notification: its place in the log. Every list of notifications (the
 * `notifications` query, a task's notifications, subscriptions) hands out the same cursor, so a
 * client can list, subscribe, and after a reconnect list on from the last notification it saw.
 */
export const notificationCursor = logPositionCursor('n2')

// GraphQL's Int is 32 bits; the parser reads up to 15 digits, and a value Int cannot carry
// would fail the whole field, so it reads as null (it stays in `fields` as sent).
function int32(value: number | undefined): number | null {
  return value !== undefined && value >= -2_147_483_648 && value <= 2_147_483_647 ? value : null
}

/**
 * Reads a stored callback as the notification node of its kind, from the values the ingest
 * verdict parsed and stored: nothing is parsed again. `fields` (everything as sent) is read from
 * the stored request only if a client selects it.
 */
export function notificationNode(row: NotificationRow): NotificationNode {
  const node = kindNode(row)
  Object.defineProperty(node, 'fields', { enumerable: true, get: () => sentFields(row) })
  return node
}

function kindNode(row: NotificationRow): NotificationNode {
  const kind = notificationKind(row.type)
  // `fields` is defined on the node afterwards, read lazily (see notificationNode).
  const common = {
    id: toGlobalId('Notification', row.id),
    kind,
    type: row.type,
    serviceCode: row.serviceCode,
    vsId: row.vsId,
    taskId: row.taskId,
    userName: row.userName,
    receivedAt: row.receivedAt,
    deliveries: row.deliveries,
    signatureVerified: row.signature === 'verified',
    cursor: notificationCursor.encode(row),
  } as Notification
  if (kind === 'UNKNOWN') return common
  const v = row.values
  const output = {
    createdAt: row.serviceCreatedAt,
    duration: v.duration ?? null,
    format: v.format ? { container: v.format.container, videoCodec: v.format.videoCodec ?? null, audioCodec: v.format.audioCodec ?? null } : null,
    isResume: v.isResume ?? null,
    tag: v.tag ?? null,
    opaque: v.opaque ?? null,
    liveOnly: v.liveOnly ?? null,
  }
  switch (kind) {
    case 'LIVE_START':
      return {
        ...common,
        ...output,
        playUrl: v.url ?? null,
        timeShiftUrl: v.svodUrl ?? null,
        width: int32(v.size?.width),
        height: int32(v.size?.height),
        path: v.path ?? null,
        clientType: int32(v.ctype),
        clientVersion: v.cversion ?? null,
      } satisfies LiveStartNotification
    case 'LIVE_END':
      return {
        ...common,
        ...output,
        reachEnd: v.reachEnd ?? null,
        outputIndex: int32(v.outputIdx),
        httpOutputBytes: v.httpOutputBytes ?? null,
        inputBytes: v.inputBytes ?? null,
      } satisfies LiveEndNotification
    case 'ARCHIVED':
      return {
        ...common,
        ...output,
        playUrl: v.url ?? null,
        fileName: v.fileName ?? null,
        path: v.path ?? null,
        width: int32(v.size?.width),
        height: int32(v.size?.height),
        outputIndex: int32(v.outputIdx),
        httpOutputBytes: v.httpOutputBytes ?? null,
        inputBytes: v.inputBytes ?? null,
        clientType: int32(v.ctype),
        clientVersion: v.cversion ?? null,
      } satisfies ArchivedNotification
    case 'THUMBNAIL':
      return {
        ...common,
        imageUrl: v.url ?? null,
        width: int32(v.width),
        height: int32(v.height),
        fileName: v.fileName ?? null,
        path: v.path ?? null,
        opaque: v.opaque ?? null,
        liveOnly: v.liveOnly ?? null,
      } satisfies ThumbnailNotification
    case 'CLIENT_DISCONNECT':
      return {
        ...common,
        sessionDuration: v.sessionDuration ?? null,
        disconnectReason: v.disconnectReason === undefined ? null : (DISCONNECT_REASON_BY_CODE[v.disconnectReason] ?? null),
        disconnectReasonCode: int32(v.disconnectReason),
      } satisfies ClientDisconnectNotification
    case 'LIVE_RESUME':
      return { ...common, status: v.status === undefined ? null : (RESUME_STATUS_BY_CODE[v.status] ?? null) } satisfies LiveResumeNotification
  }
}
