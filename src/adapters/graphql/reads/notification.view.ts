import type { NotificationRow } from '../../../storage/notification.queries.js'
import { sentFields } from '../../../model/callback.record.js'
import { callbackKind, KINDS, type ViewField } from '../../../model/callback.kinds.js'
import { DISCONNECT_REASON_BY_CODE, RESUME_STATUS_BY_CODE } from '../../../fold/graph.model.js'
import { toGlobalId } from '../global.id.js'
import { logPositionCursor } from '../connection.pagination.js'
import type { Notification } from '../types/notification.type.js'

/**
 * What a `Notification` resolves from: plain data with the GraphQL field names of its kind (the
 * common fields of every notification, and the typed fields of the kind's entry in the kinds table).
 */
export type NotificationNode = Notification & Record<string, unknown>

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
  const kind = callbackKind(row.type)
  // `fields` is defined on the node afterwards, read lazily (see notificationNode).
  const node = {
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
  } as NotificationNode
  if (kind === 'UNKNOWN') return node
  for (const [name, field] of VIEWS[kind]) node[name] = viewValue(field, row)
  return node
}

// Each kind's typed fields as a list, made once rather than for every row of a page.
const VIEWS = Object.fromEntries(
  Object.entries(KINDS).map(([kind, { view }]) => [kind, Object.entries(view)]),
) as unknown as Record<keyof typeof KINDS, Array<[string, ViewField]>>

/** A typed value as its GraphQL field reads it; null when it was not sent or cannot be shown. */
function viewValue(field: ViewField, row: NotificationRow): unknown {
  const v = row.values
  switch (field.from) {
    case 'createdAt':
      return row.serviceCreatedAt
    case 'size.width':
      return int32(v.size?.width)
    case 'size.height':
      return int32(v.size?.height)
  }
  const value = v[field.from]
  if (value === undefined || value === null) return null
  switch (field.as) {
    case 'Int':
      return int32(value as number)
    case 'MediaFormat': {
      const format = value as NonNullable<typeof v.format>
      return {
        container: format.container,
        videoCodec: format.videoCodec ?? null,
        audioCodec: format.audioCodec ?? null,
      }
    }
    case 'DisconnectReason':
      return DISCONNECT_REASON_BY_CODE[value as number] ?? null
    case 'ResumeStatus':
      return RESUME_STATUS_BY_CODE[value as number] ?? null
    default:
      return value
  }
}
