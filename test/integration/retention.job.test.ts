import { randomUUID } from 'node:crypto'
import { Writable } from 'node:stream'
import { and, eq, inArray } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { GraphProjector } from '../../src/work/graph/graph.projector.js'
import { callbacks } from '../../src/storage/tables/callback.table.js'
import { tasks } from '../../src/storage/tables/graph.table.js'
import { refusals } from '../../src/storage/tables/refusal.table.js'
import { startGateway } from '../../src/gateway.assembly.js'
import { RetentionJob } from '../../src/work/retention.job.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { signFor, send, TEST_CONFIG } from '../support/gateway.fixture.js'

const DAY_MS = 86_400_000
const NOW = new Date('2030-06-01T12:00:00Z')
const silent = { info: () => {}, debug: () => {}, warn: () => {} }

let db: TestDatabase
const statements: string[] = []

beforeAll(async () => {
  db = await openTestDatabase({ logger: { logQuery: (query) => statements.push(query) } })
})
afterAll(async () => {
  await db.drop()
})

/** Inserts callbacks received `daysAgo` days before `at`; answers their ids. */
async function insertCallbacks(count: number, daysAgo: number, at = NOW): Promise<number[]> {
  const receivedAt = new Date(at.getTime() - daysAgo * DAY_MS)
  const rows = Array.from({ length: count }, () => ({
    dedupeKey: randomUUID(),
    type: 0,
    serviceCode: 'TESTING',
    taskId: randomUUID(),
    receivedAt,
    lastDeliveredAt: receivedAt,
    values: {},
    method: 'POST',
    path: '/callbacks',
    body: Buffer.from('type=0&service_code=TESTING'),
    headers: {},
    signature: 'verified' as const,
  }))
  const ids = (await db.database.db.insert(callbacks).values(rows).returning({ id: callbacks.id })).map((row) => row.id)
  // Retention takes only callbacks the graph has folded: fold them, as a running gateway would.
  await new GraphProjector({ database: db.database, log: console }).catchUp()
  return ids
}

async function insertRefusals(count: number, daysAgo: number, at = NOW): Promise<number[]> {
  const receivedAt = new Date(at.getTime() - daysAgo * DAY_MS)
  const rows = Array.from({ length: count }, () => ({
    receivedAt,
    reason: 'SIGNATURE_INVALID',
    message: 'refused',
    method: 'POST',
    path: '/callbacks',
    body: Buffer.from('x'),
    bodySize: 1,
    headers: {},
  }))
  return (await db.database.db.insert(refusals).values(rows).returning({ id: refusals.id })).map((row) => row.id)
}

async function remaining(table: typeof callbacks | typeof refusals, ids: number[]): Promise<number> {
  return (await db.database.db.select({ id: table.id }).from(table).where(inArray(table.id, ids))).length
}

describe(`retention (${driverName})`, () => {
  test('prunes rows older than the cutoff in bounded batches and keeps newer ones', async () => {
    const oldCallbacks = await insertCallbacks(10, 91)
    const newCallbacks = await insertCallbacks(4, 89)
    const oldRefusals = await insertRefusals(7, 8)
    const newRefusals = await insertRefusals(3, 6)
    const job = new RetentionJob({
      db: db.database.db,
      retention: { callbacksDays: 90, refusalsDays: 7, intervalMs: 0, batchSize: 3 },
      log: silent,
      now: () => NOW,
    })

    statements.length = 0
    const results = await job.runOnce()
    expect(results).toEqual([
      { table: 'callbacks', cutoff: new Date(NOW.getTime() - 90 * DAY_MS), deleted: 10, statements: 4 },
      { table: 'refusals', cutoff: new Date(NOW.getTime() - 7 * DAY_MS), deleted: 7, statements: 3 },
    ])
    // Every statement the database saw deleted at most one batch.
    const deletes = statements.filter((sql) => /^\s*delete from/i.test(sql))
    expect(deletes).toHaveLength(7)
    expect(deletes.every((sql) => /limit \$\d+ for update skip locked/i.test(sql))).toBe(true)

    expect(await remaining(callbacks, oldCallbacks)).toBe(0)
    expect(await remaining(callbacks, newCallbacks)).toBe(4)
    expect(await remaining(refusals, oldRefusals)).toBe(0)
    expect(await remaining(refusals, newRefusals)).toBe(3)

    // Nothing left to prune: one statement per table, nothing deleted.
    expect((await job.runOnce()).map((r) => [r.deleted, r.statements])).toEqual([
      [0, 1],
      [0, 1],
    ])
  })

  test('0 days keeps a table forever; concurrent runs share one prune', async () => {
    const oldCallbacks = await insertCallbacks(2, 5000)
    const oldRefusals = await insertRefusals(2, 5000)
    const keepCallbacks = new RetentionJob({
      db: db.database.db,
      retention: { callbacksDays: 0, refusalsDays: 7, intervalMs: 0, batchSize: 5000 },
      log: silent,
      now: () => NOW,
    })
    const [first, second] = [keepCallbacks.runOnce(), keepCallbacks.runOnce()]
    expect(first).toBe(second)
    expect((await first).map((r) => [r.table, r.deleted])).toEqual([['refusals', 2]])
    expect(await remaining(callbacks, oldCallbacks)).toBe(2)
    expect(await remaining(refusals, oldRefusals)).toBe(0)
    expect(
      new RetentionJob({
        db: db.database.db,
        retention: { callbacksDays: 0, refusalsDays: 0, intervalMs: 1000, batchSize: 1 },
        log: silent,
      }).enabled,
    ).toBe(false)
    await db.database.db.delete(callbacks).where(inArray(callbacks.id, oldCallbacks))
  })

  test(
    'a gateway prunes on schedule from start, logs what it ' + 'pruned, keeps task states, and stops on close',
    async () => {
      const lines: string[] = []
      const logStream = new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk))
          done()
        },
      })
      const config = loadConfig({
        env: {},
        value: {
          ...TEST_CONFIG,
          database: { dataDir: 'memory://' },
          log: { level: 'info' },
          retention: { callbacksDays: 30, refusalsDays: 7, intervalMs: 150, batchSize: 2 },
        },
      })
      const gateway = await startGateway(
        { ...config, port: 0, host: '127.0.0.1' },
        { database: db.database, logStream },
      )
      try {
        // A real callback, folded into its task, then aged past the cutoff.
        const taskId = randomUUID()
        expect((await send(signFor(gateway, sampleCallbacks(taskId).liveStart as Record<string, string>))).status).toBe(
          200,
        )
        const aged = new Date(Date.now() - 31 * DAY_MS)
        await db.database.db.update(callbacks).set({ receivedAt: aged }).where(eq(callbacks.taskId, taskId))
        const recent = await insertCallbacks(2, 1, new Date())
        const oldRefusals = await insertRefusals(3, 8, new Date())

        await expect
          .poll(
            async () => (await db.database.db.select().from(callbacks).where(eq(callbacks.taskId, taskId))).length,
            {
              timeout: 10_000,
            },
          )
          .toBe(0)
        await expect.poll(() => remaining(refusals, oldRefusals), { timeout: 10_000 }).toBe(0)
        expect(await remaining(callbacks, recent)).toBe(2)
        const task = await db.database.db
          .select()
          .from(tasks)
          .where(and(eq(tasks.serviceCode, 'TESTING'), eq(tasks.taskId, taskId)))
        expect(task).toHaveLength(1)
        expect(task[0]?.status).toBe('LIVE')

        const pruned = lines
          .map((line) => JSON.parse(line) as Record<string, unknown>)
          .filter((line) => String(line.msg).startsWith('retention: pruned'))
        expect(pruned.some((line) => line.table === 'callbacks' && Number(line.deleted) >= 1)).toBe(true)
        expect(pruned.some((line) => line.table === 'refusals' && line.deleted === 3 && line.statements === 2)).toBe(
          true,
        )
      } finally {
        await gateway.close()
      }
      // Closed: the schedule is gone, so an old row inserted now stays.
      const afterClose = await insertCallbacks(1, 365, new Date())
      await new Promise((resolve) => setTimeout(resolve, 500))
      expect(await remaining(callbacks, afterClose)).toBe(1)
    },
  )
})
