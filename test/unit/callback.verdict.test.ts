import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { KIND_ENTRIES } from '../../src/model/callback.kinds.js'
import { signCallback } from '../../src/model/callback.sign.js'
import { type InboundRequest, ingestPolicy, judgeCallback } from '../../src/model/callback.verdict.js'
import type { ErrorCode } from '../../src/model/error.catalogue.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { SECRET, TEST_CONFIG } from '../support/gateway.fixture.js'

// The pure verdict on one delivery, table by table: every refusal, each edge of the timestamp
// window, every kind. No HTTP and no database: the request is built as the route would build it.

const POLICY = ingestPolicy(loadConfig({ env: {}, value: TEST_CONFIG }))
const TOLERANCE_MS = POLICY.toleranceMs
const NOW = Date.UTC(2030, 0, 1, 12)
const SAMPLES = sampleCallbacks('verdict-task') as Record<string, Record<string, string>>
const LIVE_START = SAMPLES.liveStart as Record<string, string>

interface Delivery {
  fields?: Record<string, string>
  method?: string
  /** How far before the server's clock the service signed. */
  signedAgoMs?: number
  secret?: string
  headerPrefix?: string
  /** Headers set (or, as undefined, removed) after signing. */
  headers?: Record<string, string | undefined>
  mediaType?: string | undefined
}

/** A delivery signed as the service signs, as the HTTP edge hands it to the verdict. */
function inbound(delivery: Delivery = {}): InboundRequest {
  const method = delivery.method ?? 'POST'
  const signed = signCallback(delivery.fields ?? LIVE_START, {
    url: 'http://gateway.test/callbacks',
    method: method === 'GET' ? 'GET' : 'POST',
    secret: delivery.secret ?? SECRET,
    headerPrefix: delivery.headerPrefix ?? 'svc',
    nowMs: NOW - (delivery.signedAgoMs ?? 0),
  })
  const url = new URL(signed.url)
  const headers: Record<string, string | undefined> = { ...signed.headers, ...delivery.headers }
  return {
    method,
    path: url.pathname,
    rawQuery: url.search.slice(1),
    mediaType:
      'mediaType' in delivery
        ? delivery.mediaType
        : method === 'POST'
          ? 'application/x-www-form-urlencoded'
          : undefined,
    body: Buffer.from(signed.body ?? ''),
    headers,
    remoteAddress: '192.0.2.1',
    receivedAt: new Date(NOW),
  }
}

const refusals: Array<[string, Delivery, ErrorCode]> = [
  ['another method', { method: 'PUT' }, 'METHOD_NOT_ALLOWED'],
  ['a POST that is not a form', { mediaType: 'text/plain' }, 'UNSUPPORTED_MEDIA_TYPE'],
  ['a POST without a media type', { mediaType: undefined }, 'UNSUPPORTED_MEDIA_TYPE'],
  ['a NUL character in a field', { fields: { ...LIVE_START, tag: 'a\u0000b' } }, 'MALFORMED_REQUEST'],
  ['no service_code', { fields: { type: '0', hashed_id: 'x' } }, 'MISSING_FIELDS'],
  ['a service code not configured', { fields: { ...LIVE_START, service_code: 'NOBODY' } }, 'UNKNOWN_SERVICE'],
  ['no signature header', { headers: { 'svc-signature': undefined } }, 'SIGNATURE_MISSING'],
  ['a signature that is not hex', { headers: { 'svc-signature': 'not-hex' } }, 'SIGNATURE_INVALID'],
  ['a signature by another secret', { secret: 'someone-else' }, 'SIGNATURE_INVALID'],
  ['no timestamp header', { headers: { 'svc-timestamp': undefined } }, 'TIMESTAMP_MISSING'],
  ['an empty timestamp header', { headers: { 'svc-timestamp': '' } }, 'TIMESTAMP_MISSING'],
  ['a timestamp in seconds', { headers: { 'svc-timestamp': String(Math.floor(NOW / 1000)) } }, 'TIMESTAMP_INVALID'],
  ['a timestamp that is no time', { headers: { 'svc-timestamp': 'yesterday' } }, 'TIMESTAMP_INVALID'],
  ['signed a moment too long ago', { signedAgoMs: TOLERANCE_MS + 1 }, 'TIMESTAMP_STALE'],
  ['signed a moment too far ahead', { signedAgoMs: -(TOLERANCE_MS + 1) }, 'TIMESTAMP_STALE'],
  ['no type', { fields: { service_code: 'TESTING', hashed_id: 'x' } }, 'MISSING_FIELDS'],
  ['a type that is no number', { fields: { ...LIVE_START, type: 'zero' } }, 'INVALID_FIELDS'],
  ['a negative type', { fields: { ...LIVE_START, type: '-1' } }, 'INVALID_FIELDS'],
  ['a type over 32 bits', { fields: { ...LIVE_START, type: '2147483648' } }, 'INVALID_FIELDS'],
  [
    'a live end without reach_end',
    { fields: { type: '1', hashed_id: 'x', service_code: 'TESTING' } },
    'MISSING_FIELDS',
  ],
  [
    'a live end with an unreadable reach_end',
    { fields: { type: '1', hashed_id: 'x', reach_end: 'maybe', service_code: 'TESTING' } },
    'INVALID_FIELDS',
  ],
  [
    'a resume with an unreadable status',
    { fields: { type: '15', hashed_id: 'x', status: '7', service_code: 'TESTING' } },
    'INVALID_FIELDS',
  ],
]

describe('judgeCallback', () => {
  it.each(refusals)('refuses %s with %s', (_name, delivery, code) => {
    const verdict = judgeCallback(inbound(delivery), POLICY)
    expect(verdict.ok).toBe(false)
    if (verdict.ok) return
    expect(verdict.error.code).toBe(code)
    expect(verdict.refusal.reason).toBe(code)
    expect(verdict.refusal.receivedAt).toEqual(new Date(NOW))
  })

  it.each(KIND_ENTRIES.flatMap(([kind, entry]) => entry.required.map((name) => [kind, name] as const)))(
    'refuses a %s without its required %s',
    (kind, name) => {
      const sample = Object.values(SAMPLES).find(
        (fields) => fields.type === String(KIND_ENTRIES.find(([k]) => k === kind)?.[1].type),
      ) as Record<string, string>
      const { [name]: _left, ...fields } = sample
      const verdict = judgeCallback(inbound({ fields }), POLICY)
      expect(verdict.ok ? undefined : verdict.error).toMatchObject({ code: 'MISSING_FIELDS', fields: [name] })
    },
  )

  it.each([
    ['signed just now', 0],
    ['signed exactly the tolerance ago', TOLERANCE_MS],
    ['signed exactly the tolerance ahead', -TOLERANCE_MS],
    ['signed a moment inside the tolerance', TOLERANCE_MS - 1],
  ])('keeps a callback %s', (_name, signedAgoMs) => {
    const verdict = judgeCallback(inbound({ signedAgoMs }), POLICY)
    expect(verdict.ok).toBe(true)
    if (verdict.ok) expect(verdict.row.signedAt).toEqual(new Date(NOW - signedAgoMs))
  })

  it.each(KIND_ENTRIES.map(([kind, entry]) => [kind, entry.type] as const))(
    'keeps a %s (type %i) with its kind, by POST and by GET',
    (kind, type) => {
      const fields = Object.values(SAMPLES).find((sample) => sample.type === String(type)) as Record<string, string>
      for (const method of ['POST', 'GET']) {
        const verdict = judgeCallback(inbound({ fields, method }), POLICY)
        expect(verdict.ok, method).toBe(true)
        if (!verdict.ok) continue
        expect(verdict.callback.kind).toBe(kind)
        expect(verdict.row).toMatchObject({
          type,
          serviceCode: 'TESTING',
          signature: 'verified',
          signatureError: null,
          method,
        })
      }
    },
  )

  it('keeps an unpublished type as UNKNOWN, with its fields', () => {
    const verdict = judgeCallback(
      inbound({ fields: { type: '77', service_code: 'TESTING', anything: 'at all' } }),
      POLICY,
    )
    expect(verdict.ok && verdict.callback.kind).toBe('UNKNOWN')
    expect(verdict.ok && verdict.fields.anything).toBe('at all')
  })

  it('takes the second header spelling, and a rotated secret', () => {
    expect(judgeCallback(inbound({ headerPrefix: 'xvs' }), POLICY).ok).toBe(true)
    const rotating = { ...LIVE_START, service_code: 'ROTATING' }
    expect(judgeCallback(inbound({ fields: rotating, secret: SECRET }), POLICY).ok).toBe(true)
    expect(judgeCallback(inbound({ fields: rotating, secret: 'def-new' }), POLICY).ok).toBe(true)
  })

  it('under verify "log" keeps a bad signature, marked failed with its code; under "off" checks none', () => {
    const logged = judgeCallback(
      inbound({ fields: { ...LIVE_START, service_code: 'LOGONLY' }, secret: 'wrong' }),
      POLICY,
    )
    expect(logged.ok && logged.row).toMatchObject({ signature: 'failed', signatureError: 'SIGNATURE_INVALID' })
    const stale = judgeCallback(
      inbound({ fields: { ...LIVE_START, service_code: 'LOGONLY' }, signedAgoMs: TOLERANCE_MS + 1 }),
      POLICY,
    )
    expect(stale.ok && stale.row).toMatchObject({ signature: 'failed', signatureError: 'TIMESTAMP_STALE' })
    const open = judgeCallback(
      inbound({
        fields: { ...LIVE_START, service_code: 'OPEN' },
        headers: { 'svc-signature': undefined, 'svc-timestamp': undefined },
      }),
      POLICY,
    )
    expect(open.ok && open.row).toMatchObject({ signature: 'skipped', signatureError: null, signedAt: null })
  })

  it('gives a delivery of the same signed callback the same dedupe key, and another signing another', () => {
    const key = (delivery: Delivery) => {
      const verdict = judgeCallback(inbound(delivery), POLICY)
      return verdict.ok ? verdict.row.dedupeKey : undefined
    }
    expect(key({})).toBe(key({}))
    expect(key({ signedAgoMs: 1 })).not.toBe(key({}))
  })
})
