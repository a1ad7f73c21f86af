import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { signCallback } from '../../src/model/callback.sign.js'
import { parseTimestamp, sign, verifySignature } from '../../src/model/signature.verify.js'

// The upstream's published test vector (shared/spec/signature.md).
const VECTOR = {
  path: '/api/20140928/task_list',
  query: 'service_code=TESTING',
  timestamp: '1443494296533',
  secret: 'abc',
  signature: 'c576f321f9ad60c92d85032a99f9856b8c432cdf55f6c275b2c8a27344a5bf14',
}

const check = (overrides: Partial<Parameters<typeof verifySignature>[0]> = {}) =>
  verifySignature({
    path: VECTOR.path,
    rawQuery: VECTOR.query,
    body: Buffer.alloc(0),
    signatureHeader: VECTOR.signature,
    timestampHeader: VECTOR.timestamp,
    secrets: [VECTOR.secret],
    nowMs: Number(VECTOR.timestamp) + 1000,
    toleranceMs: 300_000,
    ...overrides,
  })

describe('sign', () => {
  it('reproduces the published test vector', () => {
    expect(sign({ path: VECTOR.path, query: VECTOR.query, body: '', timestamp: VECTOR.timestamp }, VECTOR.secret)).toBe(
      VECTOR.signature,
    )
  })

  it('does not reproduce it with the ? in the message', () => {
    expect(
      sign({ path: VECTOR.path, query: `?${VECTOR.query}`, body: '', timestamp: VECTOR.timestamp }, VECTOR.secret),
    ).not.toBe(VECTOR.signature)
  })
})

describe('verifySignature', () => {
  it('accepts the published test vector', () => {
    expect(check()).toEqual({ ok: true, secretIndex: 0 })
  })

  it('accepts an upper-case signature (hex is hex)', () => {
    expect(check({ signatureHeader: VECTOR.signature.toUpperCase() }).ok).toBe(true)
  })

  it.each([
    ['path', { path: '/api/20140928/task_lisT' }],
    ['query', { rawQuery: 'service_code=TESTINH' }],
    ['body', { body: Buffer.from('x') }],
    ['timestamp', { timestampHeader: '1443494296534' }],
    ['secret', { secrets: ['abd'] }],
  ])('refuses a tampered %s as SIGNATURE_INVALID', (_part, overrides) => {
    const verdict = check(overrides)
    expect(verdict.ok).toBe(false)
    if (!verdict.ok) expect(verdict.error.code).toBe('SIGNATURE_INVALID')
  })

  it('names a missing signature and a missing timestamp', () => {
    expect(check({ signatureHeader: undefined })).toMatchObject({ ok: false, error: { code: 'SIGNATURE_MISSING' } })
    expect(check({ timestampHeader: undefined })).toMatchObject({ ok: false, error: { code: 'TIMESTAMP_MISSING' } })
    expect(check({ timestampHeader: '' })).toMatchObject({ ok: false, error: { code: 'TIMESTAMP_MISSING' } })
  })

  it('refuses a signature of the wrong shape without comparing', () => {
    expect(check({ signatureHeader: VECTOR.signature.slice(1) })).toMatchObject({
      ok: false,
      error: { code: 'SIGNATURE_INVALID' },
    })
    expect(check({ signatureHeader: `${VECTOR.signature.slice(1)}g` })).toMatchObject({
      ok: false,
      error: { code: 'SIGNATURE_INVALID' },
    })
  })

  it('refuses a genuine but stale timestamp with its own code, in both directions', () => {
    const ts = Number(VECTOR.timestamp)
    expect(check({ nowMs: ts + 300_000 }).ok).toBe(true)
    expect(check({ nowMs: ts + 300_001 })).toMatchObject({ ok: false, error: { code: 'TIMESTAMP_STALE' } })
    expect(check({ nowMs: ts - 300_001 })).toMatchObject({ ok: false, error: { code: 'TIMESTAMP_STALE' } })
  })

  it('refuses a seconds timestamp by name instead of reading it as milliseconds', () => {
    const seconds = '1443494296'
    const signature = sign({ path: VECTOR.path, query: VECTOR.query, body: '', timestamp: seconds }, VECTOR.secret)
    const verdict = check({ timestampHeader: seconds, signatureHeader: signature, nowMs: 1443494296 * 1000 })
    expect(verdict).toMatchObject({ ok: false, error: { code: 'TIMESTAMP_INVALID' } })
    if (!verdict.ok) expect(verdict.error.message).toMatch(/seconds/)
  })

  it('accepts any secret of a rotating service and says which matched', () => {
    expect(check({ secrets: ['new-secret', VECTOR.secret] })).toEqual({ ok: true, secretIndex: 1 })
  })

  it('accepts a query signed before percent-encoding, as the service signs it', () => {
    const request = signCallback(
      { type: '15', username: 'bob smith', note: 'a&b=c/d' },
      { url: 'http://h/callbacks', method: 'GET', secret: 'abc', nowMs: 1_700_000_000_000 },
    )
    const url = new URL(request.url)
    const verdict = verifySignature({
      path: url.pathname,
      rawQuery: url.search.slice(1),
      body: Buffer.alloc(0),
      signatureHeader: request.headers['svc-signature'],
      timestampHeader: request.headers['svc-timestamp'],
      secrets: ['abc'],
      nowMs: 1_700_000_000_000,
      toleranceMs: 300_000,
    })
    expect(verdict.ok).toBe(true)
  })

  it('never accepts a signature made with another secret (property)', () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.string(),
        fc.uint8Array({ maxLength: 200 }),
        fc.string({ minLength: 1 }),
        fc.string({ minLength: 1 }),
        (path, query, body, secret, other) => {
          fc.pre(secret !== other)
          const timestamp = '1700000000000'
          const signature = sign({ path, query, body, timestamp }, secret)
          const verdict = verifySignature({
            path,
            rawQuery: query,
            body,
            signatureHeader: signature,
            timestampHeader: timestamp,
            secrets: [other],
            nowMs: 1_700_000_000_000,
            toleranceMs: 300_000,
          })
          return !verdict.ok
        },
      ),
    )
  })
})

describe('parseTimestamp', () => {
  it.each([
    ['1443494296533', 1443494296533],
    ['2015-09-29T02:38:16.533Z', 1443494296533],
    ['2015-09-29T10:38:16.533+08:00', 1443494296533],
    ['2015-09-29 10:38:16.533+0800', 1443494296533],
  ])('reads %s', (text, ms) => {
    expect(parseTimestamp(text)).toEqual({ ok: true, ms })
  })

  it.each(['1443494296', 'yesterday', '2015-09-29T02:38:16', '-1443494296533', '1e12', ''])(
    'refuses %j as TIMESTAMP_INVALID',
    (text) => {
      expect(parseTimestamp(text)).toMatchObject({ ok: false, error: { code: 'TIMESTAMP_INVALID' } })
    },
  )
})
