import type { NotificationRow } from '../../storage/notification.queries.js'
import { type CallbackValues, type ParsedCallback, parseCallback } from '../../model/callback.parse.js'
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
import { rowIdCursor } from './pagination.js'
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
 * The cursor of a notification: its row id. Every list of notifications (the `notifications`
 * query, a task's notifications, subscriptions) hands out the same cursor, so a client can
 * list, subscribe, and after a reconnect list on from the last notification it saw.
 */
export const notificationCursor = rowIdCursor('n1')

// GraphQL's Int is 32 bits; the parser reads up to 15 digits, and a value Int cannot carry
// would fail the whole field, so it reads as null (it stays in `fields` as sent).
function int32(value: number | undefined): number | null {
  return value !== undefined && value >= -2_147_483_648 && value <= 2_147_483_647 ? value : null
}

/**
 * Reads a stored callback as the notification node of its kind. The typed values are parsed
 * from the fields as sent, with the same parser the ingest route used, so the graph reads a
 * value exactly as the route judged it; a value that cannot be read is null.
 */
export function notificationNode(row: NotificationRow): NotificationNode {
  const kind = notificationKind(row.type)
  const common: Notification = {
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
    fields: row.fields,
    cursor: notificationCursor.encode(row.id),
  }
  if (kind === 'UNKNOWN') return common
  const verdict = parseCallback(row.fields)
  // A kept callback parsed when it arrived; should a later parser refuse it, its typed values read as null.
  const parsed: Partial<ParsedCallback> = verdict.ok ? verdict.callback : {}
  const v: CallbackValues = parsed.values ?? {}
  const output = {
    createdAt: parsed.createdAt ?? null,
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
