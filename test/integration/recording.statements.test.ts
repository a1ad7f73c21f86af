import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ListedFile } from '../../src/model/list-files.schema.js'
import { upsertAnnouncedRecordings, upsertListedFiles } from '../../src/storage/graph/recording.statements.js'
import { resultRows } from '../../src/storage/database.client.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'

const file = (fileName: string, views: number): ListedFile => ({
  fileName,
  createdAt: new Date('2026-01-02T03:04:05Z'),
  duration: 12.5,
  width: 720,
  height: 1280,
  userName: 'alice',
  description: '',
  url: `http://vod.example/${fileName}`,
  location: '',
  views,
  likes: 0,
})

// The catalogue's writes: what a list_files answer and a type 2 write, and what they leave alone.
describe(`the catalogue's statements on ${driverName}`, () => {
  let db: TestDatabase

  beforeAll(async () => {
    db = await openTestDatabase()
  })
  afterAll(async () => {
    await db?.drop()
  })

  it('an answer with nothing new writes no row; a changed count writes only its row', async () => {
    const files = Array.from({ length: 50 }, (_, i) => file(`f${i}.mp4`, i))
    const first = await upsertListedFiles(db.database.db, 'A', files, new Date())
    expect(first).toHaveLength(50)
    expect(first.every((row) => row.created)).toBe(true)
    expect(await upsertListedFiles(db.database.db, 'A', files, new Date())).toEqual([])
    const watched = files.map((f) => (f.fileName === 'f7.mp4' ? { ...f, views: 1000 } : f))
    const second = await upsertListedFiles(db.database.db, 'A', watched, new Date())
    expect(second.map((row) => [row.fileName, row.created])).toEqual([['f7.mp4', false]])
  })

  it('a type 2 for a listed file joins its row (one id), and is not written twice', async () => {
    const announced = {
      ...{
        fileName: 'f3.mp4',
        taskId: 'task-3',
        userName: 'alice',
        url: null,
        duration: null,
        width: null,
        height: null,
      },
      ...{ outputIndex: 0, tag: 'mp4_hd', path: 'a/f3.mp4', format: null, inputBytes: 10, httpOutputBytes: null },
      ...{ liveStartedAt: null, receivedAt: new Date() },
    }
    const [row] = await upsertAnnouncedRecordings(db.database.db, 'A', [announced], new Date())
    expect(row).toMatchObject({ fileName: 'f3.mp4', taskId: 'task-3', created: false })
    expect(await upsertAnnouncedRecordings(db.database.db, 'A', [announced], new Date())).toEqual([])
    // Another code's file of the same name is another recording.
    const [other] = await upsertAnnouncedRecordings(db.database.db, 'B', [announced], new Date())
    expect(other).toMatchObject({ created: true })
    expect(other?.id).not.toBe(row?.id)
  })

  it('a batch naming one file twice writes one row, merged as one type 2 after the other', async () => {
    const base = {
      ...{ fileName: 'twice.mp4', taskId: 'task-a', userName: 'alice', url: 'http://vod.example/twice.mp4' },
      ...{ duration: 61, width: 1280, height: 720, outputIndex: 0, tag: 'flv_hd', path: 'a/', format: null },
      ...{ inputBytes: 1, httpOutputBytes: null, liveStartedAt: null, receivedAt: new Date('2026-01-02T00:00:00Z') },
    }
    const copy = { ...base, receivedAt: new Date('2026-01-02T00:00:01Z') }
    const moved = { ...base, taskId: 'task-b', url: null, tag: 'hls_hd', receivedAt: new Date('2026-01-02T00:00:02Z') }
    // Handed over out of receipt order: the later type 2 still wins.
    const written = await upsertAnnouncedRecordings(db.database.db, 'C', [moved, base, copy], new Date())
    expect(written.map((w) => [w.fileName, w.taskId, w.created])).toEqual([['twice.mp4', 'task-b', true]])
    const [stored] = resultRows<{ task_id: string; url: string; tag: string }>(
      await db.database.db.execute(
        sql`select task_id, url, tag from recordings where service_code = 'C' and file_name = 'twice.mp4'`,
      ),
    )
    expect(stored).toEqual({ task_id: 'task-b', url: base.url, tag: 'hls_hd' })
  })

  it("an answer naming one file twice writes one row, with the later listing's counts", async () => {
    const written = await upsertListedFiles(
      db.database.db,
      'D',
      [file('dup.mp4', 3), file('other.mp4', 1), file('dup.mp4', 5)],
      new Date(),
    )
    expect(written.map((row) => row.fileName).sort()).toEqual(['dup.mp4', 'other.mp4'])
    const rows = resultRows<{ views: number }>(
      await db.database.db.execute(
        sql`select views from recordings where service_code = 'D' and file_name = 'dup.mp4'`,
      ),
    )
    expect(rows).toEqual([{ views: 5 }])
  })
})
