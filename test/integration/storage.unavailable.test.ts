import { randomUUID } from 'node:crypto'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { callbacks } from '../../src/storage/tables/callback.table.js'
import { openDatabase } from '../../src/storage/database.client.js'
import { startGateway } from '../../src/gateway.assembly.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase } from '../support/database.fixture.js'
import { send, signFor, TEST_CONFIG } from '../support/gateway.fixture.js'
import { metricValue, scrapeMetrics } from '../support/metrics.scrape.js'
import { scratchDirs } from '../support/scratch.dir.js'

const scratch = scratchDirs('livegate-unavailable-')

/** A gateway with the given spool on a database of its own, which the test then closes under it. */
async function withGateway(
  spool: Record<string, unknown>,
  run: (parts: Awaited<ReturnType<typeof start>>) => Promise<void>,
) {
  const parts = await start(spool)
  try {
    await run(parts)
  } finally {
    await parts.gateway.close()
    await parts.db.drop()
  }
}

async function start(spool: Record<string, unknown>) {
  const db = await openTestDatabase()
  const gateway = await startGateway(loadConfig({ env: {}, value: { ...TEST_CONFIG, spool } }), {
    database: db.database,
  })
  const deliver = (fields: Record<string, string>) => send(signFor(gateway, fields))
  return { db, gateway, deliver }
}

describe(`storage unavailable (${driverName})`, () => {
  it('a callback the database cannot take is spooled and answered 200, and what was kept stays kept', async () => {
    const dir = scratch()
    await withGateway({ dir }, async ({ db, gateway, deliver }) => {
      const kept = sampleCallbacks(randomUUID()).liveStart as Record<string, string>
      expect((await deliver(kept)).status).toBe(200)

      await db.database.close()
      const spooled = sampleCallbacks(randomUUID()).liveEnd as Record<string, string>
      const answer = await deliver(spooled)
      expect(answer.status, answer.text).toBe(200)
      expect(answer.text).toBe('{"ret":0}')
      const segments = readdirSync(dir).filter((name) => name.startsWith('spool-'))
      const lines = segments.flatMap((name) => readFileSync(join(dir, name), 'utf8').split('\n').filter(Boolean))
      expect(lines.map((line) => (JSON.parse(line) as { taskId: string }).taskId)).toEqual([spooled.hashed_id])

      const samples = await scrapeMetrics(gateway.url)
      expect(metricValue(samples, 'livegate_callbacks_total', { type: '0', verdict: 'kept' })).toBe(1)
      expect(metricValue(samples, 'livegate_callbacks_total', { type: '1', verdict: 'spooled' })).toBe(1)
      expect(metricValue(samples, 'livegate_ingest_seconds_count', { outcome: 'spooled' })).toBe(1)
      expect(metricValue(samples, 'livegate_spool_depth')).toBe(1)

      // The row answered 200 before the fault is still there (on a server, seen through a new pool).
      if (db.url) {
        const reopened = await openDatabase({ url: db.url, dataDir: 'memory://' })
        const rows = await reopened.db.select({ taskId: callbacks.taskId }).from(callbacks)
        await reopened.close()
        expect(rows).toEqual([{ taskId: kept.hashed_id }])
      }
    })
  })

  const unwritable = () => {
    const file = join(scratch(), 'not-a-directory')
    writeFileSync(file, '')
    return { dir: join(file, 'spool') }
  }
  it.each([
    ['cannot be written', unwritable],
    ['is turned off (maxBytes 0)', () => ({ dir: scratch(), maxBytes: 0 })],
  ])('when the spool %s either, the answer is 503 STORAGE_UNAVAILABLE', async (_label, spool) => {
    await withGateway(spool(), async ({ db, gateway, deliver }) => {
      await db.database.close()
      const answer = await deliver(sampleCallbacks(randomUUID()).liveEnd as Record<string, string>)
      expect(answer.status, answer.text).toBe(503)
      expect(answer.body).toMatchObject({ ret: 50301, code: 'STORAGE_UNAVAILABLE' })
      expect(answer.text).not.toMatch(/stack|at .*\.ts:\d+/)
      const samples = await scrapeMetrics(gateway.url)
      expect(metricValue(samples, 'livegate_callbacks_total', { type: '1', verdict: 'STORAGE_UNAVAILABLE' })).toBe(1)
      expect(metricValue(samples, 'livegate_ingest_seconds_count', { outcome: 'unavailable' })).toBe(1)
    })
  })
})
