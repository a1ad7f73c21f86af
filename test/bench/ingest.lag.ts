/**
 * The projection lag as the gateway itself measures it: `livegate_projection_lag_seconds`
 * observes every folded callback, seconds from its arrival to the commit of the transaction that
 * folded it into the task and user states. Arrival comes before the acknowledgement and the
 * state is visible from that commit on, so it bounds "acknowledged → visible" from above, for
 * every callback rather than a sample, and works the same for a gateway in this process and for
 * `serve` processes the bench only reaches over HTTP.
 */
export interface LagSnapshot {
  /** Cumulative counts by upper bound in seconds, ascending, `+Inf` last. */
  buckets: Array<{ le: number; count: number }>
  count: number
  sumSeconds: number
  /** Callbacks answered as kept or spooled: what the projection must eventually fold. */
  accepted: number
}

const LAG = 'livegate_projection_lag_seconds'

/** Reads the lag histogram and the accepted-callback count from a gateway's `/metrics`. */
export async function scrapeLag(url: string): Promise<LagSnapshot> {
  const answer = await fetch(new URL('/metrics', url))
  if (!answer.ok) throw new Error(`${url}/metrics answered ${answer.status}`)
  const text = await answer.text()
  const buckets: LagSnapshot['buckets'] = []
  let count = 0
  let sumSeconds = 0
  let accepted = 0
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue
    const value = Number(line.slice(line.lastIndexOf(' ') + 1))
    if (line.startsWith(`${LAG}_bucket{`)) {
      const le = /le="([^"]+)"/.exec(line)?.[1] ?? '+Inf'
      buckets.push({ le: le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le), count: value })
    } else if (line.startsWith(`${LAG}_count`)) count = value
    else if (line.startsWith(`${LAG}_sum`)) sumSeconds = value
    else if (line.startsWith('livegate_callbacks_total{') && /verdict="(kept|spooled)"/.test(line)) accepted += value
  }
  buckets.sort((a, b) => a.le - b.le)
  return { buckets, count, sumSeconds, accepted }
}

/** Several snapshots as one (the gateways of one deployment), or `after − before` with `sign` −1. */
export function combineLag(snapshots: LagSnapshot[], signs: number[] = snapshots.map(() => 1)): LagSnapshot {
  const first = snapshots[0] as LagSnapshot
  const pick = (f: (s: LagSnapshot) => number) => snapshots.reduce((n, s, i) => n + (signs[i] as number) * f(s), 0)
  return {
    buckets: first.buckets.map((bucket, b) => ({ le: bucket.le, count: pick((s) => s.buckets[b]?.count ?? 0) })),
    count: pick((s) => s.count),
    sumSeconds: pick((s) => s.sumSeconds),
    accepted: pick((s) => s.accepted),
  }
}

/** What happened between two snapshots of the same gateways. */
export function lagBetween(before: LagSnapshot, after: LagSnapshot): LagSnapshot {
  return combineLag([after, before], [1, -1])
}

/**
 * The q-quantile in milliseconds, interpolated linearly inside its bucket as Prometheus's
 * `histogram_quantile` does: good to a bucket's width, exact at the bounds (0.1 s is one).
 */
export function lagQuantileMs(lag: LagSnapshot, q: number): number {
  if (lag.count <= 0) return Number.NaN
  const rank = q * lag.count
  let lower = 0
  let below = 0
  for (const bucket of lag.buckets) {
    if (bucket.count >= rank) {
      if (!Number.isFinite(bucket.le)) return lower * 1000
      const inside = bucket.count - below
      return (lower + (inside > 0 ? (bucket.le - lower) * ((rank - below) / inside) : 0)) * 1000
    }
    lower = bucket.le
    below = bucket.count
  }
  return lower * 1000
}

/** The share of folded callbacks whose lag was at most `seconds` (a bucket bound, so exact). */
export function lagShareWithin(lag: LagSnapshot, seconds: number): number {
  const bucket = lag.buckets.find((b) => b.le === seconds)
  if (!bucket) throw new Error(`no lag bucket at ${seconds} s`)
  return lag.count > 0 ? bucket.count / lag.count : Number.NaN
}

/**
 * Waits until the gateways at `urls` have folded every callback they accepted (whichever holds
 * the projector lease folds, so they are summed), and says how long that took: the catch-up
 * after a window, so the next round starts on a projection that is not behind.
 */
export async function settleByMetrics(urls: string[], timeoutMs = 60_000): Promise<number> {
  const started = performance.now()
  for (;;) {
    const now = combineLag(await Promise.all(urls.map(scrapeLag)))
    if (now.count >= now.accepted) return performance.now() - started
    if (performance.now() - started > timeoutMs)
      throw new Error(`projection still ${now.accepted - now.count} callbacks behind after ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
