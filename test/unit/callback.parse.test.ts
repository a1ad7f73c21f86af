import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseCallback, REQUIRED_FIELDS } from '../../src/model/callback.parse.js'
import { dedupeKey, parseForm } from '../../src/model/callback.verdict.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'

const samples = sampleCallbacks('aws-cn_north_1-5-a6eaff8eeef36a3b')

const parsed = (fields: Record<string, string>) => {
  const verdict = parseCallback(fields)
  if (!verdict.ok) throw new Error(`refused: ${verdict.error.message}`)
  return verdict.callback
}

describe('parseCallback', () => {
  it('reads a live start into typed values', () => {
    const callback = parsed(samples.liveStart as Record<string, string>)
    expect(callback).toMatchObject({
      kind: 'LIVE_START',
      type: 0,
      serviceCode: 'TESTING',
      vsId: 'xvs-5',
      taskId: 'aws-cn_north_1-5-a6eaff8eeef36a3b',
      userName: 'alice',
      createdAt: new Date(1444701446 * 1000),
      values: {
        size: { width: 480, height: 800 },
        duration: 0,
        format: { container: 'flv', videoCodec: 'libx264', audioCodec: 'aac' },
        isResume: false,
        liveOnly: false,
        ctype: 10,
        cversion: '451',
        opaque: 'order=42&room=7',
        tag: 'tcp_output_live_only',
      },
      unreadable: [],
    })
  })

  it('reads a live end, an archive, a thumbnail, a disconnect and a resume', () => {
    expect(parsed(samples.liveEnd as Record<string, string>)).toMatchObject({
      kind: 'LIVE_END',
      values: { reachEnd: true, httpOutputBytes: 1048576, inputBytes: 2097152, duration: 61.5, outputIdx: 0 },
    })
    expect(parsed(samples.archived as Record<string, string>)).toMatchObject({
      kind: 'ARCHIVED',
      values: { fileName: expect.stringMatching(/\.mp4$/), outputIdx: 1 },
    })
    expect(parsed(samples.thumbnail as Record<string, string>)).toMatchObject({
      kind: 'THUMBNAIL',
      values: { width: 320, height: 240 },
    })
    expect(parsed(samples.clientDisconnect as Record<string, string>)).toMatchObject({
      kind: 'CLIENT_DISCONNECT',
      userName: 'alice',
      values: { sessionDuration: 3600, disconnectReason: 1 },
    })
    expect(parsed(samples.liveResume as Record<string, string>)).toMatchObject({
      kind: 'LIVE_RESUME',
      userName: 'alice',
      values: { status: 0 },
    })
  })

  it('keeps an unknown type and unknown fields', () => {
    const callback = parsed({ type: '3', service_code: 'TESTING', file_name: 'seg-0.ts', seq: '0', hashed_id: 't1' })
    expect(callback).toMatchObject({ kind: 'UNKNOWN', type: 3, taskId: 't1', values: { fileName: 'seg-0.ts' } })
  })

  it.each(Object.entries(REQUIRED_FIELDS))('names the missing required fields of type %s', (type, required) => {
    const verdict = parseCallback({ type, service_code: 'TESTING' })
    expect(verdict).toMatchObject({ ok: false, error: { code: 'MISSING_FIELDS', fields: [...required] } })
  })

  it('requires type and service_code of every notification', () => {
    expect(parseCallback({})).toMatchObject({
      ok: false,
      error: { code: 'MISSING_FIELDS', fields: ['type', 'service_code'] },
    })
    expect(parseCallback({ type: 'zero', service_code: 'X' })).toMatchObject({
      ok: false,
      error: { code: 'INVALID_FIELDS', fields: ['type'] },
    })
  })

  it('refuses an unreadable required field, and keeps an unreadable optional one as sent', () => {
    expect(parseCallback({ ...samples.liveEnd, reach_end: 'yes' } as Record<string, string>)).toMatchObject({
      ok: false,
      error: { code: 'INVALID_FIELDS', fields: ['reach_end'] },
    })
    const callback = parsed({ ...samples.liveStart, size: 'big', created_at: '1444701446000' } as Record<
      string,
      string
    >)
    expect(callback.values.size).toBeUndefined()
    expect(callback.createdAt).toBeUndefined()
    expect(callback.unreadable.sort()).toEqual(['created_at', 'size'])
  })

  it('takes the first of a field sent twice', () => {
    expect(parsed({ type: '0', service_code: 'S', hashed_id: ['a', 'b'] } as never).taskId).toBe('a')
  })

  it('never throws, whatever the fields (property)', () => {
    const name = fc.oneof(
      fc.constantFrom(
        'type',
        'service_code',
        'hashed_id',
        'size',
        'created_at',
        'status',
        'reach_end',
        '__proto__',
        'constructor',
        'toString',
      ),
      fc.string(),
    )
    fc.assert(
      fc.property(
        fc.dictionary(name, fc.oneof(fc.string(), fc.constantFrom('0', '1', '15', '480x800', '-1', '1e3'))),
        (fields) => {
          const verdict = parseCallback(fields)
          return verdict.ok ? typeof verdict.callback.type === 'number' : typeof verdict.error.code === 'string'
        },
      ),
      { numRuns: 2000 },
    )
  })
})

describe('parseForm', () => {
  it('keeps repeated names in order and prototype-looking names as plain fields', () => {
    const fields = parseForm('a=1&__proto__=x&a=2&constructor=y&b=%E4%B8%AD+x')
    expect({ ...fields }).toEqual({ a: ['1', '2'], ['__proto__']: 'x', constructor: 'y', b: '中 x' })
    expect(Object.getPrototypeOf(fields)).toBeNull()
  })
})

describe('dedupeKey', () => {
  it('ignores field order and encoding, but not the signed timestamp', () => {
    const a = dedupeKey(parseForm('type=0&hashed_id=t&x=a+b'), '1')
    expect(dedupeKey(parseForm('x=a%20b&hashed_id=t&type=0'), '1')).toBe(a)
    expect(dedupeKey(parseForm('type=0&hashed_id=t&x=a+b'), '2')).not.toBe(a)
    expect(dedupeKey(parseForm('type=0&hashed_id=u&x=a+b'), '1')).not.toBe(a)
  })
})
