import { eq, sql } from 'drizzle-orm'
import { describe, expect } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { ingestPolicy, judgeCallback } from '../../src/model/callback.verdict.js'
import { MAX_INDEXED_TEXT_BYTES } from '../../src/model/stored.limits.js'
import { appendCallbacks, ringDoorbell } from '../../src/storage/callback.statements.js'
import { resultRows } from '../../src/storage/database.client.js'
import { recordings } from '../../src/storage/tables/recording.table.js'
import { tasks } from '../../src/storage/tables/graph.table.js'
import { driverName } from '../support/database.fixture.js'
import { ROTATED_SECRET, TEST_CONFIG, test } from '../support/gateway.fixture.js'
import { metricValue, scrapeMetrics } from '../support/metrics.scrape.js'

// issue 41, defect 1: a type 2 whose values the catalogue cannot hold stopped the projector for every tenant.
describe(`a callback whose values the database cannot hold stops no tenant (${driverName})`, () => {
  const start = (taskId: string, serviceCode = 'TESTING') => ({
    type: '0',
    service_code: serviceCode,
    hashed_id: taskId,
    username: 'ann',
    created_at: '1767225600',
    format: 'flv/libx264/aac',
    live_only: '0',
  })
  const archived = (taskId: string, extra: Record<string, string>) => ({
    type: '2',
    service_code: 'TESTING',
    hashed_id: taskId,
    username: 'ann',
    file_name: `${taskId}.mp4`,
    output_idx: '0',
    ...extra,
  })

  test('output_idx 3000000000 and a 2,000-character file name are kept, and the code after them folds', async ({
    gateway,
    deliver,
    db,
  }) => {
    expect((await deliver(start('edge-1'))).status).toBe(200)
    expect((await deliver(archived('edge-1', { output_idx: '3000000000' }))).status).toBe(200)
    expect((await deliver(archived('edge-1', { file_name: `${'録'.repeat(2000)}.mp4` }))).status).toBe(200)
    expect((await deliver(start('edge-other', 'ROTATING'), { secret: ROTATED_SECRET })).status).toBe(200)
    await gateway.settle()

    const other = await db.database.db.select().from(tasks).where(eq(tasks.serviceCode, 'ROTATING'))
    expect(other.map((row) => row.taskId)).toEqual(['edge-other'])
    // The file whose index cannot be held is still catalogued, without the index.
    const [file] = await db.database.db.select().from(recordings).where(eq(recordings.fileName, 'edge-1.mp4'))
    expect(file).toMatchObject({ taskId: 'edge-1', outputIndex: null })
    // The name the catalogue's key cannot hold is no recording; the callback stays in the log as sent.
    const names = await db.database.db.select({ fileName: recordings.fileName }).from(recordings)
    expect(names.every((row) => Buffer.byteLength(row.fileName) <= MAX_INDEXED_TEXT_BYTES)).toBe(true)
  })

  test('a task id or user longer than an index holds is refused with INVALID_FIELDS; an optional user is left out', async ({
    gateway,
    deliver,
    db,
  }) => {
    const long = 'é'.repeat(MAX_INDEXED_TEXT_BYTES)
    const refused = await deliver(start(long))
    expect(refused.status).toBe(400)
    expect(refused.body).toMatchObject({ code: 'INVALID_FIELDS' })
    expect((await deliver({ ...start('edge-2'), username: long })).status).toBe(200)
    await gateway.settle()
    const [task] = await db.database.db.select().from(tasks).where(eq(tasks.taskId, 'edge-2'))
    expect(task?.author).toBeNull()
  })

  test('a logged row that still cannot be folded is set aside, counted and logged; the rows behind it fold', async ({
    gateway,
    db,
    deliver,
  }) => {
    // What a gateway before the verdict's limits logged: a type 2 whose output index the catalogue cannot hold.
    const config = loadConfig({ env: {}, value: TEST_CONFIG })
    const form = new URLSearchParams(archived('edge-3', { output_idx: '1' })).toString()
    const verdict = judgeCallback(
      {
        method: 'POST',
        path: '/callbacks',
        rawQuery: '',
        mediaType: 'application/x-www-form-urlencoded',
        body: Buffer.from(form),
        headers: {},
        remoteAddress: '127.0.0.1',
        receivedAt: new Date(),
      },
      {
        ...ingestPolicy(config),
        services: new Map([['TESTING', { serviceCode: 'TESTING', secrets: [], verify: 'off' }]]),
      },
    )
    if (!verdict.ok) throw new Error(verdict.error.message)
    const poisoned = { ...verdict.row, values: { ...verdict.row.values, outputIdx: 3_000_000_000 }, deliveries: 1 }
    expect((await deliver(start('edge-3'))).status).toBe(200)
    const [kept] = await appendCallbacks(db.database.db, [poisoned])
    await ringDoorbell(db.database.db)
    expect((await deliver(start('edge-after', 'ROTATING'), { secret: ROTATED_SECRET })).status).toBe(200)
    await gateway.settle()

    const after = await db.database.db.select().from(tasks).where(eq(tasks.taskId, 'edge-after'))
    expect(after).toHaveLength(1)
    // Still in the log, as it was kept.
    const [logged] = resultRows<{ id: string }>(
      await db.database.db.execute(sql`select id from callbacks where id = ${kept?.id}`),
    )
    expect(Number(logged?.id)).toBe(kept?.id)
    const samples = await scrapeMetrics(gateway.url)
    expect(metricValue(samples, 'livegate_projector_set_aside_total', { service_code: 'TESTING' })).toBe(1)
  })
})
