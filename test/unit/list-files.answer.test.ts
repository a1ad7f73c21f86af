import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  type ListedFile,
  listFilesAnswerSchema,
  readListedFile,
  readListFilesAnswer,
} from '../../src/model/list-files.schema.js'

// The schema alone, as the poller read an answer before the hand check: the reference it must match.
function bySchema(json: unknown): { files: ListedFile[] } | { refused: true } {
  const parsed = listFilesAnswerSchema.safeParse(json)
  if (!parsed.success) return { refused: true }
  const byName = new Map<string, ListedFile>()
  for (const item of parsed.data.items) {
    const file = readListedFile(item)
    if (file) byName.set(file.fileName, file)
  }
  return { files: [...byName.values()] }
}

const read = (json: unknown) => {
  const answer = readListFilesAnswer(json)
  return 'problem' in answer ? { refused: true as const } : { files: answer.files }
}

const file = (name: string, views: string) => ({
  file_name: { S: name },
  created_at: { N: '1700000000' },
  duration: { N: '61.5' },
  user_name: { S: 'alice' },
  access_cnt: { N: views },
})

describe('readListFilesAnswer', () => {
  it('reads a well-formed answer as the schema does: typed values, a repeated name once', () => {
    const json = { ret: 0, msg: 'ok', items: [file('a.mp4', '3'), file('b.mp4', '4'), file('a.mp4', '5')] }
    const answer = read(json)
    expect(answer).toEqual(bySchema(json))
    expect(answer).toMatchObject({ files: [{ fileName: 'a.mp4', views: 5, duration: 61.5 }, { fileName: 'b.mp4' }] })
    expect(read({ ret: 0 })).toEqual({ files: [] })
  })

  it('refuses every malformed answer the schema refuses, saying where', () => {
    const malformed: unknown[] = [
      null,
      [],
      'items',
      { items: null },
      { items: {} },
      { items: { length: {} } },
      { items: { length: [{}] } },
      { items: [null] },
      { items: [[]] },
      { items: [{ file_name: 'a.mp4' }] },
      { items: [{ file_name: { S: 1 } }] },
      { items: [{ file_name: { S: 'a', N: '1' } }] },
      { items: [{ file_name: { S: 'a', extra: true } }] },
      { items: [{ file_name: {} }] },
      { items: [{ file_name: null }] },
      { items: [{ access_cnt: { N: '1'.repeat(41) } }] },
      { items: [{ access_cnt: { N: 1 } }] },
      { items: Array.from({ length: 100_001 }, () => ({})) },
    ]
    for (const json of malformed) {
      expect(bySchema(json), JSON.stringify(json).slice(0, 80)).toEqual({ refused: true })
      expect(read(json), JSON.stringify(json).slice(0, 80)).toEqual({ refused: true })
    }
    expect(readListFilesAnswer({ items: [file('a.mp4', '1'), { url: { S: 'x', N: '1' } }] })).toEqual({
      problem: expect.stringMatching(/^items\.1\.url: /),
    })
  })

  // An answer is what JSON.parse made of the cloud's body, so every object has Object's prototype:
  // fast-check's records and dictionaries may otherwise be null-prototype objects, on which zod's
  // length check throws (an answer JSON cannot spell, found by CI's seed 1440419020).
  const plain = { noNullPrototype: true } as const

  it('accepts exactly what the schema accepts, and reads it the same, for any answer', () => {
    const scalar = fc.oneof(fc.string({ maxLength: 45 }), fc.integer(), fc.constant(null), fc.boolean())
    const typed = fc.oneof(
      fc.record({ S: fc.oneof(fc.string({ maxLength: 12 }), scalar) }, plain),
      fc.record({ N: fc.oneof(fc.stringMatching(/^-?\d{0,44}(\.\d{0,3})?$/), scalar) }, plain),
      fc.record({ S: fc.string(), N: fc.string() }, plain),
      fc.dictionary(fc.constantFrom('S', 'N', 'X'), scalar, { maxKeys: 3, ...plain }),
      scalar,
      fc.array(scalar, { maxLength: 2 }),
    )
    const fields = fc.constantFrom('file_name', 'created_at', 'duration', 'width', 'user_name', 'access_cnt', 'other')
    const item = fc.oneof(
      fc.dictionary(fields, typed, { maxKeys: 7, ...plain }),
      scalar,
      fc.array(typed, { maxLength: 2 }),
    )
    const answer = fc.oneof(
      fc.record({ ret: fc.constant(0), items: fc.array(item, { maxLength: 6 }) }, { requiredKeys: ['ret'], ...plain }),
      fc.record({ items: fc.oneof(scalar, fc.dictionary(fc.string(), item, { maxKeys: 2, ...plain })) }, plain),
      scalar,
    )
    fc.assert(
      fc.property(answer, (json) => {
        expect(read(json)).toEqual(bySchema(json))
      }),
      { numRuns: 2000 },
    )
  })
})
