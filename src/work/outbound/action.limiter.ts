import type { KeyWindow } from '../../storage/outbound/action.statements.js'

/** What {@link decideRate} decided. */
export type RateDecision = 'allowed' | 'first-refusal' | 'refused'

/**
 * Decides a key's next request from what the audit holds of its last window (read under the key's
 * turn, {@link KeyWindow}): at most `limit` slots taken in any window, whichever worker or instance
 * took them. Past the limit, the first refusal since the key's last allowed request is told apart:
 * it is the one recorded, so a client hammering past its limit cannot flood the audit.
 */
export function decideRate(limit: number, window: KeyWindow): RateDecision {
  if (window.taken < limit) return 'allowed'
  const { lastRefusedAt, lastTakenAt } = window
  return lastRefusedAt && (!lastTakenAt || lastRefusedAt >= lastTakenAt) ? 'refused' : 'first-refusal'
}
