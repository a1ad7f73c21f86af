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
export function counterStep(before: { bytes: number | null; at: number } | undefined, after: { bytes: number | null; at: number }): CounterStep | null {
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
