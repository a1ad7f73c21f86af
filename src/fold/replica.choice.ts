/**
 * Which database serves a read: a streaming replica, or the primary. Pure, so the rule that keeps
 * a reader from ever seeing something older than it already saw is tested on its own (issue 44).
 *
 * A replica serves a read only when it answered its last probe, is no further behind than the
 * allowed lag, and, when the read names a position (a WAL location the client was answered at),
 * has replayed at least up to it. Among those, the least behind serves; with none, the primary.
 */

/** What the last probe of a replica said. */
export interface ReplicaReading {
  name: string
  /** False when the probe failed or timed out: skipped until it answers again. */
  answering: boolean
  /** How far its replay is behind the primary's commits, in milliseconds. */
  lagMs: number
  /** The WAL location it has replayed up to ({@link walLocation}); undefined when unknown. */
  replayed: bigint | undefined
}

/** Where a read goes: a replica by its name, or the primary. */
export type ReadChoice = { target: 'replica'; name: string; lagMs: number } | { target: 'primary'; lagMs: 0 }

/**
 * The replica for a read, or the primary. `atLeast` is the WAL location the read names: a replica
 * whose replay is unknown or behind it never serves that read.
 */
export function chooseRead(
  readings: readonly ReplicaReading[],
  maxLagMs: number,
  atLeast?: bigint | undefined,
): ReadChoice {
  let best: ReplicaReading | undefined
  for (const reading of readings) {
    if (!reading.answering || reading.lagMs > maxLagMs) continue
    if (atLeast !== undefined && (reading.replayed === undefined || reading.replayed < atLeast)) continue
    if (!best || reading.lagMs < best.lagMs) best = reading
  }
  return best ? { target: 'replica', name: best.name, lagMs: best.lagMs } : { target: 'primary', lagMs: 0 }
}

/**
 * A WAL location as PostgreSQL writes it (`16/B374D848`: two 32-bit hex halves) as one number, to
 * compare; undefined for text that is not one (a position the client made up is no position).
 */
export function walLocation(text: string): bigint | undefined {
  const match = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text)
  if (!match) return undefined
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`)
}
