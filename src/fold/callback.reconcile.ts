/** Where the push-vs-poll check of one task stands. */
export interface ReconcileTrack {
  /** When a task_list answer first listed it. */
  firstListedAt: number
  /** When an answer first left it out after listing it; null while listed. */
  leftAt: number | null
  startChecked: boolean
  endChecked: boolean
}

/** What the callbacks said of the task so far. */
export interface CallbackFacts {
  hasStart: boolean
  hasEnd: boolean
}

/** The outcome of one check: which checks are now settled, and which of them found a callback missing. */
export interface ReconcileOutcome {
  startChecked: boolean
  endChecked: boolean
  missingStart: boolean
  missingEnd: boolean
}

/**
 * The rules of reconciliation. A listed task whose type 0 has not come within `graceMs` of its
 * first listing is "missing start"; one that left the list with no type 1 within `graceMs` is
 * "missing end". Each is settled once (a late callback does not undo that it was missing; a
 * settled check is never counted again), and a callback that arrives in time settles its check
 * at once.
 */
export function reconcile(track: ReconcileTrack, facts: CallbackFacts, now: number, graceMs: number): ReconcileOutcome {
  const out: ReconcileOutcome = { startChecked: track.startChecked, endChecked: track.endChecked, missingStart: false, missingEnd: false }
  if (!track.startChecked && (facts.hasStart || now >= track.firstListedAt + graceMs)) {
    out.startChecked = true
    out.missingStart = !facts.hasStart
  }
  if (!track.endChecked && track.leftAt !== null && (facts.hasEnd || now >= track.leftAt + graceMs)) {
    out.endChecked = true
    out.missingEnd = !facts.hasEnd
  }
  return out
}
