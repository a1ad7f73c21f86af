import type { CallbackStore, KeptCallback } from './callback.store.js'
import type { CallbackRecord } from '../../model/callback.record.js'
import type { CallbackSpool } from './spool/callback.spool.js'
import { CALLBACK_KINDS } from '../../model/callback.kinds.js'

/** Where an accepted callback went: the database, the spool, or nowhere (answer 503). */
export type IntakeOutcome =
  | { verdict: 'kept' | 'duplicate'; kept: KeptCallback }
  | { verdict: 'spooled'; storeError: unknown }
  | { verdict: 'unavailable'; storeError: unknown; spoolError: unknown }

/**
 * Takes an accepted callback durably: into the database, else into the spool. While the spool
 * holds anything, a newer callback queues behind it, so the replay keeps arrival order and a
 * request no longer waits on a database that is away; if the spool cannot take it, the database
 * is tried after all. Resolves to `unavailable` only when neither could.
 */
export async function intakeCallback(
  row: CallbackRecord,
  store: Pick<CallbackStore, 'keep'>,
  spool: CallbackSpool | undefined,
): Promise<IntakeOutcome> {
  let spoolError: unknown
  if (spool && spool.depth() > 0) {
    try {
      await spool.append(row)
      return { verdict: 'spooled', storeError: undefined }
    } catch (error) {
      spoolError = error
    }
  }
  try {
    const kept = await store.keep(row)
    return { verdict: kept.deliveries > 1 ? 'duplicate' : 'kept', kept }
  } catch (storeError) {
    if (!spool || spoolError !== undefined) return { verdict: 'unavailable', storeError, spoolError }
    try {
      await spool.append(row)
      return { verdict: 'spooled', storeError }
    } catch (error) {
      return { verdict: 'unavailable', storeError, spoolError: error }
    }
  }
}

/**
 * The `type` label of the callbacks metric: a published type's number, else `unknown`, so that
 * junk cannot mint label values without bound.
 */
export function typeLabel(type: string | number | null | undefined): string {
  const text = type === null || type === undefined ? '' : String(type)
  return Object.hasOwn(CALLBACK_KINDS, text) ? text : 'unknown'
}
