import { appendFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig, MEMORY_DATA_DIR } from '../../src/config/index.js'
import { CallbackStore } from '../../src/work/ingest/callback.store.js'
import type { CallbackRecord } from '../../src/model/callback.record.js'
import { sentFields } from '../../src/model/callback.record.js'
import { callbacks } from '../../src/storage/tables/callback.table.js'
import { type Database, openDatabase } from '../../src/storage/database.client.js'
import { CallbackSpool, SpoolFullError } from '../../src/work/ingest/spool/callback.spool.js'
import { decodeSpoolEntry, encodeSpoolEntry } from '../../src/work/ingest/spool/spool.codec.js'
import { spoolLocation } from '../../src/work/ingest/spool/spool.owner.js'
import { SpoolReplayer } from '../../src/work/ingest/spool/spool.replayer.js'
import { judgeCallback } from '../../src/model/callback.verdict.js'
import { scratchDirs } from '../support/scratch.dir.js'

const scratch = scratchDirs('livegate-spool-test-')
const silent = { info() {}, warn() {}, error() {}, debug() {} }
const segmentsIn = (dir: string) =>
  readdirSync(dir)
    .filter((name) => name.startsWith('spool-'))
    .sort()
const linesOf = (dir: string) =>
  segmentsIn(dir).flatMap((name) => readFileSync(join(dir, name), 'utf8').split('\n').filter(Boolean))

/** A real accepted row, judged by the ingest verdict (the OPEN service checks no signature). */
function rowFor(seq: number, taskId = 'spool-task'): CallbackRecord {
  const fields = { type: '15', service_code: 'OPEN', hashed_id: taskId, status: '1', seq: String(seq) }
  const verdict = judgeCallback(
    {
      method: 'POST',
      path: '/callbacks',
      rawQuery: '',
      mediaType: 'application/x-www-form-urlencoded',
      body: Buffer.from(new URLSearchParams(fields).toString()),
      headers: { 'svc-timestamp': String(1_700_000_000_000 + seq) },
      remoteAddress: '127.0.0.1',
      receivedAt: new Date(1_700_000_000_000 + seq),
    },
    {
      services: new Map([['OPEN', { serviceCode: 'OPEN', secrets: [], verify: 'off' }]]),
      toleranceMs: 1,
      headerPrefixes: ['svc'],
      refusedBodyLimit: 64,
    },
  )
  if (!verdict.ok) throw new Error(verdict.error.message)
  return verdict.row
}

const text = fc.string({ unit: 'binary', maxLength: 40 })
const nullable = fc.option(text, { nil: null })
const time = fc.date({ noInvalidDate: true })
const spooledRow: fc.Arbitrary<CallbackRecord> = fc.record({
  dedupeKey: text,
  type: fc.integer(),
  serviceCode: text,
  taskId: nullable,
  userName: nullable,
  vsId: nullable,
  serviceCreatedAt: fc.option(time, { nil: null }),
  receivedAt: time,
  lastDeliveredAt: time,
  signedAt: fc.option(time, { nil: null }),
  values: fc.record(
    { url: text, tag: text, outputIdx: fc.integer(), size: fc.record({ width: fc.nat(), height: fc.nat() }) },
    { requiredKeys: [] },
  ),
  method: text,
  path: text,
  query: text,
  body: fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
  headers: fc.dictionary(text, text),
  remoteAddress: nullable,
  signature: fc.constantFrom('verified' as const, 'failed' as const, 'skipped' as const),
  signatureError: nullable,
})

describe('the spool line', () => {
  it('round-trips every row exactly, on one line', () => {
    fc.assert(
      fc.property(spooledRow, (row) => {
        const line = encodeSpoolEntry(row)
        expect(line).not.toContain('\n')
        const decoded = decodeSpoolEntry(line)
        expect(decoded).toEqual({ ...row })
        expect(decoded?.body.equals(row.body)).toBe(true)
        expect(decoded?.values).toEqual(row.values)
      }),
    )
  })

  it('keeps the traceparent of a traced callback, and writes none for an untraced one', () => {
    const traced = { ...rowFor(1), traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }
    expect(decodeSpoolEntry(encodeSpoolEntry(traced))?.traceparent).toBe(traced.traceparent)
    expect(encodeSpoolEntry(rowFor(2))).not.toContain('traceparent')
    expect(decodeSpoolEntry(encodeSpoolEntry(rowFor(2)))).not.toHaveProperty('traceparent')
  })

  it('never reads a torn line as an entry, and never throws on junk', () => {
    fc.assert(
      fc.property(spooledRow, fc.nat(), (row, cut) => {
        const line = encodeSpoolEntry(row)
        expect(decodeSpoolEntry(line.slice(0, cut % line.length))).toBeUndefined()
      }),
    )
    fc.assert(fc.property(fc.string({ unit: 'binary' }), (junk) => void decodeSpoolEntry(junk)))
    expect(decodeSpoolEntry('{"v":1}')).toBeUndefined()
    expect(decodeSpoolEntry('{"v":2,"dedupeKey":"x"}')).toBeUndefined()
  })
})

describe('the spool location', () => {
  it('is spool.dir, else beside the embedded database, else a per-process temp directory', () => {
    const at = (value: Record<string, unknown>) => spoolLocation(loadConfig({ env: {}, value }))
    expect(at({})).toEqual({ dir: join('data', 'spool'), scratch: false })
    expect(at({ database: { url: 'postgres://a@b/c' } })).toEqual({ dir: join('data', 'spool'), scratch: false })
    expect(at({ database: { dataDir: '/var/lib/livegate' } })).toEqual({
      dir: '/var/lib/livegate/spool',
      scratch: false,
    })
    expect(at({ database: { dataDir: MEMORY_DATA_DIR } })).toEqual({
      dir: join(tmpdir(), `livegate-spool-${process.pid}`),
      scratch: true,
    })
    expect(at({ database: { dataDir: MEMORY_DATA_DIR }, spool: { dir: '/srv/spool' } })).toEqual({
      dir: '/srv/spool',
      scratch: false,
    })
    expect(loadConfig({ env: {} }).spool.maxBytes).toBe(256 * 1024 * 1024)
  })
})

describe('the spool file', () => {
  it(
    'resolves an append only once its line is on disk, keeps ' +
      'call order, and groups queued appends into fewer syncs',
    async () => {
      const dir = scratch()
      const spool = await CallbackSpool.open({ dir, maxBytes: 1024 * 1024 })
      await spool.append(rowFor(0))
      expect(linesOf(dir)).toHaveLength(1)
      await Promise.all(Array.from({ length: 200 }, (_, index) => spool.append(rowFor(index + 1))))
      const seqs = linesOf(dir).map((line) =>
        (() => {
          const decoded = decodeSpoolEntry(line)
          return decoded ? sentFields(decoded).seq : undefined
        })(),
      )
      expect(seqs).toEqual(Array.from({ length: 201 }, (_, index) => String(index)))
      expect(spool.depth()).toBe(201)
      expect(spool.syncs).toBeLessThan(201)
      await spool.close()
    },
  )

  it('refuses an append beyond maxBytes, and one it cannot write', async () => {
    const small = await CallbackSpool.open({ dir: scratch(), maxBytes: encodeSpoolEntry(rowFor(0)).length + 1 })
    await small.append(rowFor(0))
    await expect(small.append(rowFor(1))).rejects.toBeInstanceOf(SpoolFullError)
    await small.close()

    const file = join(scratch(), 'a-file')
    writeFileSync(file, '')
    const unwritable = await CallbackSpool.open({ dir: join(file, 'spool'), maxBytes: 1024 * 1024 })
    await expect(unwritable.append(rowFor(0))).rejects.toThrow(/ENOTDIR|ENOENT/)
    expect(unwritable.depth()).toBe(0)
    await unwritable.close()
  })

  it('keeps its entries across a reopen and cuts off a torn last line', async () => {
    const dir = scratch()
    const first = await CallbackSpool.open({ dir, maxBytes: 1024 * 1024 })
    for (let seq = 0; seq < 3; seq += 1) await first.append(rowFor(seq))
    await first.close()
    const [segment] = segmentsIn(dir) as [string]
    // A crash in the middle of a write: half a line, no newline, never acknowledged.
    appendFileSync(join(dir, segment), encodeSpoolEntry(rowFor(99)).slice(0, 50))

    const second = await CallbackSpool.open({ dir, maxBytes: 1024 * 1024 })
    expect(second.depth()).toBe(3)
    const [adopted] = second.segments()
    const rows = await second.read(adopted as NonNullable<typeof adopted>)
    expect(rows.map((row) => sentFields(row).seq)).toEqual(['0', '1', '2'])
    expect(readFileSync(adopted?.path as string, 'utf8').endsWith('\n')).toBe(true)
    await second.close()
  })

  it('leaves the segments of a spool that is still open, and of a live process, alone', async () => {
    const dir = scratch()
    const open = await CallbackSpool.open({ dir, maxBytes: 1024 * 1024 })
    await open.append(rowFor(0))
    writeFileSync(join(dir, `spool-${process.ppid}-0abc-0000000001.jsonl`), `${encodeSpoolEntry(rowFor(1))}\n`)
    const other = await CallbackSpool.open({ dir, maxBytes: 1024 * 1024 })
    expect(other.depth()).toBe(0)
    await Promise.all([open.close(), other.close()])
  })
})

describe('replaying the spool', () => {
  let database: Database
  beforeAll(async () => {
    database = await openDatabase({ dataDir: MEMORY_DATA_DIR })
    await database.migrate()
  })
  afterAll(() => database.close())

  it('keeps every entry once, in arrival order, sets damage aside, and removes what it replayed', async () => {
    const dir = scratch()
    const writer = await CallbackSpool.open({ dir, maxBytes: 1024 * 1024, segmentBytes: 2000 })
    for (let seq = 0; seq < 12; seq += 1) await writer.append(rowFor(seq, 'replay-order'))
    await writer.close()
    const segments = segmentsIn(dir)
    expect(segments.length).toBeGreaterThan(2)
    // Damage in the middle of a segment (not a torn tail): set aside, the rest still replayed.
    appendFileSync(join(dir, segments[1] as string), '{"v":1,"not":"an entry"}\n')
    // An entry kept before a crash cut the replay short is kept again, harmlessly.
    const store = new CallbackStore(database.db)
    await store.keep(rowFor(0, 'replay-order'))

    const spool = await CallbackSpool.open({ dir, maxBytes: 1024 * 1024 })
    expect(spool.depth()).toBe(12)
    const replayer = new SpoolReplayer({ spool, store, log: silent, retryBaseMs: 10, idleMs: 50 })
    replayer.start()
    await expect.poll(() => spool.depth(), { timeout: 10_000 }).toBe(0)
    await replayer.stop()
    await spool.close()

    const rows = await database.db.select().from(callbacks).orderBy(callbacks.id)
    const replayed = rows.filter((row) => row.taskId === 'replay-order')
    expect(replayed.map((row) => sentFields(row).seq)).toEqual(Array.from({ length: 12 }, (_, seq) => String(seq)))
    expect(replayed.every((row) => row.deliveries === 1)).toBe(true)
    expect(segmentsIn(dir)).toEqual([])
    const [rejected] = readdirSync(dir).filter((name) => name.startsWith('rejected-'))
    expect(readFileSync(join(dir, rejected as string), 'utf8')).toContain('not\\":\\"an entry')
  })
})
