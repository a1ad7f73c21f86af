import { randomUUID } from 'node:crypto'
import postgres from 'postgres'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { comparePositions, LOG_START, type LogPosition } from '../../src/model/log.position.js'
import { logTail, notificationPage, notificationsAfter } from '../../src/storage/notification.queries.js'
import { openTestDatabase, type TestDatabase, describeOnServer } from '../support/database.fixture.js'

/**
 * Callbacks are acknowledged on many connections and instances at once, with no lock between
 * them, so row ids are handed out in one order and committed in another. A reader that resumes
 * "after the last one I saw" must still see every callback once: these tests make transactions
 * commit out of order on a real server and read the log the way lists, replays and the event hub
 * do. Remove the "final" rule (storage/log.kernel.ts) and they fail.
 */
describeOnServer('log positions under concurrent writers (postgres)', () => {
  let db: TestDatabase
  const clients: postgres.Sql[] = []
  const connect = () => {
    const client = postgres(db.url as string, { max: 1, onnotice: () => {} })
    clients.push(client)
    return client
  }

  beforeAll(async () => {
    db = await openTestDatabase()
  })
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.end({ timeout: 5 })))
    await db.drop()
  })

  const insert = (sql: postgres.Sql | postgres.TransactionSql, taskId: string, seq: number) =>
    sql`insert into callbacks (dedupe_key, type, service_code, task_id, received_at, last_delivered_at, values, method,
      path, query, body, headers, signature)
        values (${randomUUID()}, 15, 'TESTING', ${taskId}, now(), now(), '{}'::jsonb, 'POST', '/callbacks',
          ${String(seq)}, ''::bytea, '{}'::jsonb, 'verified')
        returning id`
  const seqOf = (row: { query: string }) => Number(row.query)

  test(
    'a transaction that took its id first but commits last ' + 'is seen before the ones after it, never skipped',
    async () => {
      const taskId = `pos-${randomUUID()}`
      const early = connect()
      const late = connect()
      const criteria = { taskId }
      let releaseEarly!: () => void
      const held = new Promise<void>((resolve) => {
        releaseEarly = resolve
      })
      let earlyInserted!: () => void
      const inserted = new Promise<void>((resolve) => {
        earlyInserted = resolve
      })
      // The early transaction writes first (the lower id and the older transaction) and waits.
      const earlyDone = early.begin(async (tx) => {
        await insert(tx, taskId, 0)
        earlyInserted()
        await held
      })
      await inserted
      await insert(late, taskId, 1)

      // Committed, but behind a transaction still running: not final, so no reader hands it out.
      expect(await notificationsAfter(db.database.db, criteria, LOG_START, 10)).toEqual([])
      expect(await notificationPage(db.database.db, criteria, { limit: 10 })).toEqual([])
      const tail = await logTail(db.database.db, LOG_START, 1000)
      expect(tail.rows.filter((row) => row.taskId === taskId)).toEqual([])
      expect(tail.pending).toBe(true)

      releaseEarly()
      await earlyDone
      // Final once every older transaction on the server has ended (others may run beside us).
      await expect
        .poll(async () => (await notificationsAfter(db.database.db, criteria, LOG_START, 10)).map(seqOf), {
          timeout: 30_000,
        })
        .toEqual([0, 1])
      // The newest-first list agrees: a cursor from it resumes exactly.
      const page = await notificationPage(db.database.db, criteria, { limit: 10 })
      expect(page.map(seqOf)).toEqual([1, 0])
    },
  )

  test(
    'readers resuming after their last position see every ' + 'callback of many racing writers exactly once',
    async () => {
      const taskId = `race-${randomUUID()}`
      const writers = Array.from({ length: 6 }, connect)
      const perWriter = 25
      let written = 0
      const writing = Promise.all(
        writers.map(async (client, w) => {
          for (let n = 0; n < perWriter; n++) {
            await client.begin(async (tx) => {
              await insert(tx, taskId, w * perWriter + n)
              // Hold some transactions open so later ones commit first.
              if ((w + n) % 3 === 0) await new Promise((resolve) => setTimeout(resolve, 1 + ((w * 7 + n) % 9)))
            })
            written += 1
          }
        }),
      )
      // Two readers resume as a reconnecting subscriber does: from the last position they saw,
      // in small pages, over and over while the writers race.
      const read = async (pageSize: number) => {
        const seen: number[] = []
        let position: LogPosition = LOG_START
        const step = async () => {
          const rows = await notificationsAfter(db.database.db, { taskId }, position, pageSize)
          for (const row of rows) {
            expect(comparePositions(row, position)).toBeGreaterThan(0)
            position = row
            seen.push(seqOf(row))
          }
          return rows.length
        }
        const total = writers.length * perWriter
        // Until every writer is done and every callback has become final (an unrelated transaction
        // elsewhere on the server may hold the horizon back for a moment).
        const deadline = Date.now() + 60_000
        while ((written < total || seen.length < total) && Date.now() < deadline) {
          if ((await step()) === 0) await new Promise((resolve) => setTimeout(resolve, 5))
        }
        return seen
      }
      const [a, b] = await Promise.all([read(1), read(7), writing])
      const all = Array.from({ length: writers.length * perWriter }, (_, i) => i)
      for (const seen of [a, b]) {
        expect(new Set(seen).size, 'no callback twice').toBe(seen.length)
        expect(
          [...seen].sort((x, y) => x - y),
          'no callback missed',
        ).toEqual(all)
      }
    },
  )
})
