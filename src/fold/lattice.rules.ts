/**
 * The pieces the fold's state is built from. Each merge is commutative, associative and
 * idempotent, so folding the same evidence in any order, or twice, gives the same state: the
 * property that lets callbacks arrive late, twice, or out of order.
 */

/**
 * Where an event stands in the service's own order: its time (the signed timestamp, else when it
 * was received), then a content key to break ties the same way everywhere.
 */
export interface Stamp {
  at: number
  key: string
}

/** A value that the latest stamp wins. */
export interface Register<T> {
  stamp: Stamp
  value: T
}

/** Orders stamps: negative when `a` is earlier. */
export function compareStamps(a: Stamp, b: Stamp): number {
  if (a.at !== b.at) return a.at < b.at ? -1 : 1
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0
}

/** The register with the later stamp (the first one on equal stamps: they hold the same event). */
export function later<T>(current: Register<T> | null, next: Register<T> | null): Register<T> | null {
  if (!current) return next
  if (!next) return current
  return compareStamps(next.stamp, current.stamp) > 0 ? next : current
}

/** The smaller of two optional numbers. */
export function minOf(a: number | null, b: number | null): number | null {
  if (a === null) return b
  if (b === null) return a
  return Math.min(a, b)
}

/** The larger of two optional numbers. */
export function maxOf(a: number | null, b: number | null): number | null {
  if (a === null) return b
  if (b === null) return a
  return Math.max(a, b)
}

/**
 * A set of registers keyed by their stamp, keeping only the `limit` latest: a bounded history
 * (thumbnails, resumes) that still merges in any order to the same result.
 */
export function addLatest<T>(entries: Register<T>[], entry: Register<T>, limit: number): Register<T>[] {
  if (entries.some((existing) => compareStamps(existing.stamp, entry.stamp) === 0)) return entries
  const merged = [...entries, entry].sort((a, b) => compareStamps(b.stamp, a.stamp))
  return merged.length > limit ? merged.slice(0, limit) : merged
}
