import type { KeyWindow } from '../../storage/outbound/action.statements.js'

/** What {@link decideRate} decided. */
export type RateDecision = 'allowed' | 'first-refusal' | 'refused'

/**
 * Decides a key's next request from what the audit holds of its last window (read under the key's
 * turn, {@link KeyWindow}): at most `limit` slots taken in any window, whichever worker or instance
 * took them. Past the limit, the first refusal since the key's last allowed request is told apart:
 * it is the one recorded (a RATE_LIMITED row for an action; the refused attempt's own row, one past
 * the limit, for an attempt refused for its permission), so a client hammering past its limit
 * cannot flood the audit.
 */
export function decideRate(limit: number, window: KeyWindow): RateDecision {
  const { taken, lastRefusedAt, lastTakenAt } = window
  if (taken < limit) return 'allowed'
  const recorded = taken > limit || (lastRefusedAt && (!lastTakenAt || lastRefusedAt >= lastTakenAt))
  return recorded ? 'refused' : 'first-refusal'
}
