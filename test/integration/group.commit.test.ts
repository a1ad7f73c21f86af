import { randomUUID } from 'node:crypto'
import { eq, inArray } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { CallbackStore } from '../../src/work/ingest/callback.store.js'
import type { CallbackRecord } from '../../src/model/callback.record.js'
import { callbacks } from '../../src/storage/tables/callback.table.js'
import { GraphProjector } from '../../src/work/graph/graph.projector.js'
import { tasks } from '../../src/storage/tables/graph.table.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'

const statements: string[] = []
let db: TestDatabase

beforeAll(async () => {
  db = await openTestDatabase({
    logger: { logQuery: (query, params) => statements.push(`${query} ${JSON.stringify(params)}`) },
  })
})
afterAll(async () => db.drop())

// A batch is one statement, its own transaction: the insert (the doorbell follows on its own).
const transactions = () => statements.filter((s) => s.includes('insert into "callbacks"')).length

function row(fields: Record<string, string>, at = new Date()): CallbackRecord {
  return {
    dedupeKey: `key-${randomUUID()}`,
    type: Number(fields.type),
    serviceCode: fields.service_code ?? 'TESTING',
    taskId: fields.hashed_id ?? null,
    userName: null,
    vsId: null,
    serviceCreatedAt: null,
    signedAt: null,
    receivedAt: at,
    lastDeliveredAt: at,
    values: {},
    method: 'POST',
    query: '',
    path: '/callbacks',
    body: Buffer.from(new URLSearchParams(fields).toString()),
    headers: {},
    remoteAddress: null,
    signature: 'skipped',
    signatureError: null,
  }
}

describe(`group commit: callbacks arriving together share one transaction (${driverName})`, () => {
  test('sixty callbacks kept at once take one statement, and every one is stored, then folded', async () => {
    const store = new CallbackStore(db.database.db)
    const ids = Array.from({ length: 60 }, () => `task-${randomUUID()}`)
    const before = transactions()
    const kept = await Promise.all(
      ids.map((id) => store.keep(row(sampleCallbacks(id).liveStart as Record<string, string>))),
    )
    expect(transactions() - before).toBe(1)
    expect(kept.every((k) => k.deliveries === 1)).toBe(true)
    // Row ids follow the order the callbacks were handed in: the subscription cursor relies on it.
    expect(kept.map((k) => k.id)).toEqual([...kept.map((k) => k.id)].sort((a, b) => a - b))
    // One transaction wrote them all, and nothing else: the graph is folded afterwards.
    const writers = await db.database.db
      .selectDistinct({ xid: callbacks.xid })
      .from(callbacks)
      .where(inArray(callbacks.taskId, ids))
    expect(writers).toHaveLength(1)
    expect(
      await db.database.db.select({ id: tasks.taskId }).from(tasks).where(inArray(tasks.taskId, ids)),
    ).toHaveLength(0)
    const projector = new GraphProjector({ database: db.database, log: console })
    await projector.catchUp()
    const folded = await db.database.db
      .select({ id: tasks.taskId, status: tasks.status })
      .from(tasks)
      .where(inArray(tasks.taskId, ids))
    expect(folded).toHaveLength(60)
    expect(folded.every((t) => t.status === 'LIVE')).toBe(true)
  })

  test('the same callback three times in one batch is one row counted three times', async () => {
    const store = new CallbackStore(db.database.db)
    const once = row(sampleCallbacks(`task-${randomUUID()}`).liveEnd as Record<string, string>)
    const kept = await Promise.all([store.keep(once), store.keep({ ...once }), store.keep({ ...once })])
    expect(new Set(kept.map((k) => k.id)).size).toBe(1)
    expect(kept.map((k) => k.deliveries)).toEqual([1, 2, 3])
    const [stored] = await db.database.db
      .select({ deliveries: callbacks.deliveries })
      .from(callbacks)
      .where(eq(callbacks.dedupeKey, once.dedupeKey))
    expect(stored?.deliveries).toBe(3)
    // A later batch goes on counting.
    expect((await store.keep({ ...once })).deliveries).toBe(4)
  })

  test('a row the database refuses fails alone: its batch neighbours are kept', async () => {
    const store = new CallbackStore(db.database.db)
    const good = [
      row(sampleCallbacks(`task-${randomUUID()}`).liveStart as Record<string, string>),
      row(sampleCallbacks(`task-${randomUUID()}`).thumbnail as Record<string, string>),
    ]
    // PostgreSQL text cannot hold NUL: the verdict refuses such callbacks, the store must still cope.
    const bad = {
      ...row(sampleCallbacks(`task-${randomUUID()}`).liveStart as Record<string, string>),
      taskId: 'nul\u0000here',
    }
    const outcomes = await Promise.allSettled([
      store.keep(good[0] as CallbackRecord),
      store.keep(bad),
      store.keep(good[1] as CallbackRecord),
    ])
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
    const stored = await db.database.db
      .select({ key: callbacks.dedupeKey })
      .from(callbacks)
      .where(
        inArray(
          callbacks.dedupeKey,
          good.map((g) => g.dedupeKey),
        ),
      )
    expect(stored).toHaveLength(2)
  })
})
