import type { ParsedCallback } from '../model/callback.parse.js'
import { type FoldFacts, type FoldSource, KINDS, type KnownKind } from '../model/callback.kinds.js'
import { type CallbackRecord, storedCallback } from '../model/callback.record.js'
import type { UpstreamTask, UpstreamUser } from '../model/task-list.schema.js'
import type { Stamp } from './lattice.rules.js'

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

/** The columns of a kept callback the fold reads. */
export type FoldableRecord = Pick<
  CallbackRecord,
  | 'type'
  | 'serviceCode'
  | 'taskId'
  | 'userName'
  | 'vsId'
  | 'serviceCreatedAt'
  | 'values'
  | 'signedAt'
  | 'receivedAt'
  | 'dedupeKey'
>

/**
 * A kept callback as a fold event, from its stored columns: the values were parsed once, at
 * ingest. Its stamp is the service's signed timestamp when one was sent: that is the service's
 * own order, whereas arrival order is the network's.
 */
export function callbackEvent(record: FoldableRecord): CallbackEvent {
  const receivedAt = record.receivedAt.getTime()
  return {
    source: 'callback',
    stamp: { at: record.signedAt ? record.signedAt.getTime() : receivedAt, key: record.dedupeKey },
    receivedAt,
    callback: storedCallback(record),
  }
}

/**
 * What the fold keeps of a callback of a kind: the values its entry folds (each null when it was
 * not sent), `created_at` in Unix ms, and when it arrived.
 */
export function factsOf<K extends KnownKind>(event: CallbackEvent, kind: K): FoldFacts<K> & { receivedAt: number } {
  const { values, createdAt } = event.callback
  const facts: Record<string, unknown> = {}
  for (const key of KINDS[kind].folds as readonly FoldSource[]) {
    facts[key] = key === 'createdAt' ? (createdAt ? createdAt.getTime() : null) : (values[key] ?? null)
  }
  facts.receivedAt = event.receivedAt
  return facts as FoldFacts<K> & { receivedAt: number }
}
