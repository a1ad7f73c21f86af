/** One step of a byte counter between two samples: the bytes it grew by and the seconds that took. */
export interface CounterStep {
  bytes: number
  seconds: number
  /** Bits per second over the step. */
  rate: number
}

/**
 * The step of a counter from `before` to `after`, or null when there is none to tell: either
 * value unknown, no time between them, or a counter that went down (the cloud restarted it), which
 * gives no rate for that step rather than a negative one or a spike.
 */
export function counterStep(
  before: { bytes: number | null; at: number } | undefined,
  after: { bytes: number | null; at: number },
): CounterStep | null {
  if (!before || before.bytes === null || after.bytes === null) return null
  const seconds = (after.at - before.at) / 1000
  if (!(seconds > 0) || after.bytes < before.bytes) return null
  const bytes = after.bytes - before.bytes
  return { bytes, seconds, rate: (bytes * 8) / seconds }
}

/** A bitrate (bits/s) from bytes and the seconds they took; null when no time was covered. */
export function bitrate(bytes: number, seconds: number): number | null {
  return seconds > 0 ? (bytes * 8) / seconds : null
}

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
  const out: ReconcileOutcome = {
    startChecked: track.startChecked,
    endChecked: track.endChecked,
    missingStart: false,
    missingEnd: false,
  }
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
