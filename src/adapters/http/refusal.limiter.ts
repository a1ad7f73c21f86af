import { isIPv6 } from 'node:net'

/** How many refusals one source may have recorded. */
export interface RefusalLimits {
  /** Refusals recorded per source and minute, with bursts up to the same number; 0 records none. */
  perMinute: number
  /** Sources remembered; beyond it the least recently seen is forgotten. */
  trackedSources: number
}

interface Bucket {
  tokens: number
  at: number
}

/**
 * A token bucket per source address, the first gate of which refusals are recorded (the second
 * is the store's count per source over the last minute, across processes). It bounds the
 * refusals table's growth from junk, never what is answered: every refusal is still answered
 * with its own code. IPv6 sources count per /64, which is what one host usually holds.
 */
export class RefusalLimiter {
  // A Map iterates in insertion order: re-inserting on use keeps the least recently seen first.
  private readonly buckets = new Map<string, Bucket>()
  private readonly ratePerMs: number

  constructor(private readonly limits: RefusalLimits) {
    this.ratePerMs = limits.perMinute / 60_000
  }

  /** Takes a token for `address` at `nowMs`: true when this refusal may be recorded. */
  allow(address: string | undefined, nowMs: number): boolean {
    const { perMinute, trackedSources } = this.limits
    if (perMinute === 0) return false
    const key = sourceKey(address)
    const bucket = this.buckets.get(key)
    let tokens = perMinute
    if (bucket) {
      this.buckets.delete(key)
      tokens = Math.min(perMinute, bucket.tokens + Math.max(0, nowMs - bucket.at) * this.ratePerMs)
    } else if (this.buckets.size >= trackedSources) {
      const oldest = this.buckets.keys().next().value
      if (oldest !== undefined) this.buckets.delete(oldest)
    }
    const allowed = tokens >= 1
    this.buckets.set(key, { tokens: allowed ? tokens - 1 : tokens, at: nowMs })
    return allowed
  }

  /**
   * What the store counts `address`'s refusals against: this bucket only spares the database the
   * junk of one process, and every worker and instance records into the one table.
   */
  quota(address: string | undefined): { sourceKey: string; perMinute: number } {
    return { sourceKey: sourceKey(address), perMinute: this.limits.perMinute }
  }

  /** Sources currently remembered. */
  get size(): number {
    return this.buckets.size
  }
}

/** The key a source is counted under: an IPv4 address as is, an IPv6 address by its /64. */
export function sourceKey(address: string | undefined): string {
  if (!address) return 'unknown'
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped) return mapped[1] as string
  if (!isIPv6(address)) return address
  return `${expandIPv6(address).slice(0, 4).join(':')}::/64`
}

function expandIPv6(address: string): string[] {
  const withoutZone = address.split('%', 1)[0] as string
  const [head = '', tail] = withoutZone.split('::', 2)
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  // An embedded IPv4 tail fills the last two groups.
  const last = right.length > 0 ? right : left
  if (last.length > 0 && (last[last.length - 1] as string).includes('.')) last.splice(-1, 1, '0', '0')
  const missing = tail === undefined ? 0 : 8 - left.length - right.length
  return [...left, ...Array<string>(Math.max(0, missing)).fill('0'), ...right].map((group) =>
    group.toLowerCase().replace(/^0+(?=.)/, ''),
  )
}
