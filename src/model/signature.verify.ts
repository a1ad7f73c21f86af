import { createHmac, timingSafeEqual } from 'node:crypto'
import { type LivegateError, livegateError } from './error.catalogue.js'

/** The four parts the service signs, concatenated with nothing between them. */
export interface SignedParts {
  /** The request path, no scheme, no host, no `?`. */
  path: string
  /** The query string without its leading `?`, as the sender signed it (values not percent-encoded). */
  query: string
  /** The raw body; empty for GET. */
  body: Uint8Array | string
  /** The exact text of the timestamp header. */
  timestamp: string
}

/** Lowercase hex HMAC-SHA256 of path + query + body + timestamp: the service's construction. */
export function sign(parts: SignedParts, secret: string): string {
  return digest(parts, secret).toString('hex')
}

function digest(parts: SignedParts, secret: string): Buffer {
  return createHmac('sha256', secret)
    .update(parts.path)
    .update(parts.query)
    .update(parts.body)
    .update(parts.timestamp)
    .digest()
}

/** What a timestamp header says, or why it says nothing usable. */
export type TimestampReading = { ok: true; ms: number } | { ok: false; error: LivegateError }

// Below this a digits-only value is a seconds count (it would be a millisecond time in 1973).
const SMALLEST_MILLISECOND_TIME = 100_000_000_000
const ZONED_DATE = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/

/**
 * Reads a timestamp header. The service sends Unix milliseconds; it also documents a date with a
 * time zone. A seconds value is refused by name: taking it as milliseconds would silently make
 * every callback stale, taking milliseconds as seconds would make every replay fresh.
 */
export function parseTimestamp(text: string): TimestampReading {
  const value = text.trim()
  if (/^\d{1,16}$/.test(value)) {
    const n = Number(value)
    if (n < SMALLEST_MILLISECOND_TIME) {
      return {
        ok: false,
        error: livegateError(
          'TIMESTAMP_INVALID',
          `The timestamp "${value}" looks like seconds; the service signs with Unix milliseconds.`,
        ),
      }
    }
    return { ok: true, ms: n }
  }
  if (ZONED_DATE.test(value)) {
    const ms = Date.parse(value.replace(' ', 'T'))
    if (Number.isFinite(ms)) return { ok: true, ms }
  }
  return { ok: false, error: livegateError('TIMESTAMP_INVALID') }
}

/** Everything {@link verifySignature} needs; no clock and no I/O of its own. */
export interface SignatureCheck {
  path: string
  /** The raw query string as received, without `?`. */
  rawQuery: string
  body: Uint8Array
  signatureHeader: string | undefined
  timestampHeader: string | undefined
  secrets: readonly string[]
  nowMs: number
  toleranceMs: number
}

/** The verdict: which secret matched, or the refusal. */
export type SignatureVerdict = { ok: true; secretIndex: number } | { ok: false; error: LivegateError }

/**
 * Verifies a request's signature against every secret of its service (several while a secret
 * rotates). The sender signs query values before percent-encoding them, so the received query is
 * tried as received and decoded; each candidate still needs the secret to match.
 */
export function verifySignature(check: SignatureCheck): SignatureVerdict {
  if (!check.signatureHeader) return { ok: false, error: livegateError('SIGNATURE_MISSING') }
  if (check.timestampHeader === undefined || check.timestampHeader === '') {
    return { ok: false, error: livegateError('TIMESTAMP_MISSING') }
  }
  const timestamp = parseTimestamp(check.timestampHeader)
  if (!timestamp.ok) return timestamp
  const given = decodeHexSignature(check.signatureHeader)
  if (!given)
    return { ok: false, error: livegateError('SIGNATURE_INVALID', 'The signature is not 64 hexadecimal characters.') }

  const queries = queryCandidates(check.rawQuery)
  for (let secretIndex = 0; secretIndex < check.secrets.length; secretIndex++) {
    const secret = check.secrets[secretIndex] as string
    for (const query of queries) {
      const expected = digest({ path: check.path, query, body: check.body, timestamp: check.timestampHeader }, secret)
      if (timingSafeEqual(expected, given)) {
        if (Math.abs(check.nowMs - timestamp.ms) > check.toleranceMs) {
          return {
            ok: false,
            error: livegateError(
              'TIMESTAMP_STALE',
              `The timestamp is more than ${Math.round(check.toleranceMs / 1000)} s away from this server's clock.`,
            ),
          }
        }
        return { ok: true, secretIndex }
      }
    }
  }
  return { ok: false, error: livegateError('SIGNATURE_INVALID') }
}

function decodeHexSignature(header: string): Buffer | undefined {
  const text = header.trim()
  if (!/^[0-9a-fA-F]{64}$/.test(text)) return undefined
  return Buffer.from(text, 'hex')
}

function queryCandidates(rawQuery: string): string[] {
  if (!/[%+]/.test(rawQuery)) return [rawQuery]
  const candidates = new Set([rawQuery])
  const percentDecoded = safeDecode(rawQuery)
  if (percentDecoded !== undefined) candidates.add(percentDecoded)
  const formDecoded = safeDecode(rawQuery.replaceAll('+', ' '))
  if (formDecoded !== undefined) candidates.add(formDecoded)
  return [...candidates]
}

function safeDecode(text: string): string | undefined {
  try {
    return decodeURIComponent(text)
  } catch {
    return undefined
  }
}
