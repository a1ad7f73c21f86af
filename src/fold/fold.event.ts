import type { CallbackRow } from '../storage/callback.table.js'
import { type ParsedCallback, parseCallback } from '../model/callback.parse.js'
import { parseTimestamp } from '../model/signature.verify.js'
import type { UpstreamTask, UpstreamUser } from '../model/task-list.schema.js'
import type { Stamp } from './lattice.js'

/** A stored callback as the fold sees it. */
export interface CallbackEvent {
  source: 'callback'
  stamp: Stamp
  receivedAt: number
  callback: ParsedCallback
}

/** What one successful task_list answer said about one task: listed (with its data) or absent. */
export interface TaskSightingEvent {
  source: 'sighting'
  serviceCode: string
  taskId: string
  takenAt: number
  task: UpstreamTask | null
}

/** What one successful task_list answer said about one user. */
export interface UserSightingEvent {
  source: 'sighting'
  serviceCode: string
  userName: string
  takenAt: number
  user: UpstreamUser | null
}

/** The fields of a callback row the fold reads. */
export type FoldableRow = Pick<CallbackRow, 'fields' | 'headers' | 'receivedAt' | 'dedupeKey'>

/**
 * A stored callback as a fold event, or null if it no longer parses (a row kept under older
 * rules). Its stamp is the service's signed timestamp when one was sent: that is the service's
 * own order, whereas arrival order is the network's.
 */
export function callbackEvent(row: FoldableRow): CallbackEvent | null {
  const parsed = parseCallback(row.fields)
  if (!parsed.ok) return null
  const receivedAt = row.receivedAt.getTime()
  return {
    source: 'callback',
    stamp: { at: signedTime(row.headers) ?? receivedAt, key: row.dedupeKey },
    receivedAt,
    callback: parsed.callback,
  }
}

function signedTime(headers: Record<string, string>): number | null {
  for (const [name, value] of Object.entries(headers)) {
    if (!name.endsWith('-timestamp')) continue
    const reading = parseTimestamp(value)
    if (reading.ok) return reading.ms
  }
  return null
}
