import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { recordingsOfTasks } from '../../src/storage/graph/recording.queries.js'
import { upsertAnnouncedRecordings } from '../../src/storage/graph/recording.statements.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'

const announced = (fileName: string, taskId: string, second: number) => ({
  ...{ fileName, taskId, userName: 'alice', url: `http://vod.example/${fileName}` },
  ...{ duration: 10, width: 1280, height: 720, outputIndex: 0, tag: 'flv_hd', path: 'a/', format: null },
  ...{ inputBytes: 1, httpOutputBytes: null, liveStartedAt: null },
  receivedAt: new Date(Date.UTC(2026, 0, 2, 0, 0, second)),
})

const names = (byTask: Map<string, Array<{ fileName: string }>>, code: string, taskId: string) =>
  byTask.get(`${code}\u0000${taskId}`)?.map((row) => row.fileName)

// A page's recordings in one read, keyed by code and task: the page groups its task ids by code,
// so one task id under two codes must stay two tasks, and a code the caller may not read stays out.
describe(`the recordings of a page of tasks on ${driverName}`, () => {
  let db: TestDatabase

  beforeAll(async () => {
    db = await openTestDatabase()
    const at = new Date('2026-01-03T00:00:00Z')
    // Written in this order, so ids rise: t1's oldest first is a1, a3.
    await upsertAnnouncedRecordings(db.database.db, 'A', [announced('a1.mp4', 't1', 1)], at)
    await upsertAnnouncedRecordings(db.database.db, 'B', [announced('b1.mp4', 't1', 2)], at)
    await upsertAnnouncedRecordings(db.database.db, 'A', [announced('a2.mp4', 't2', 3)], at)
    await upsertAnnouncedRecordings(db.database.db, 'A', [announced('a3.mp4', 't1', 4)], at)
    await upsertAnnouncedRecordings(db.database.db, 'B', [announced('b9.mp4', 't9', 5)], at)
  })
  afterAll(async () => {
    await db?.drop()
  })

  it("answers each task's own recordings, oldest first, one task id under two codes kept apart", async () => {
    const keys = [
      { serviceCode: 'A', taskId: 't1' },
      { serviceCode: 'B', taskId: 't1' },
      { serviceCode: 'A', taskId: 't2' },
      { serviceCode: 'A', taskId: 'none' },
    ]
    const byTask = await recordingsOfTasks(db.database.db, keys, undefined)
    expect(names(byTask, 'A', 't1')).toEqual(['a1.mp4', 'a3.mp4'])
    expect(names(byTask, 'B', 't1')).toEqual(['b1.mp4'])
    expect(names(byTask, 'A', 't2')).toEqual(['a2.mp4'])
    expect(names(byTask, 'A', 'none')).toBeUndefined()
    // B's t9 was not asked for; A's t1 asked twice reads its rows once.
    expect([...byTask.keys()].sort()).toEqual(['A\u0000t1', 'A\u0000t2', 'B\u0000t1'])
    const twice = await recordingsOfTasks(db.database.db, [...keys, { serviceCode: 'A', taskId: 't1' }], undefined)
    expect(names(twice, 'A', 't1')).toEqual(['a1.mp4', 'a3.mp4'])
  })

  it("reads none of a code outside the caller's, and nothing when no code is left", async () => {
    const keys = [
      { serviceCode: 'A', taskId: 't1' },
      { serviceCode: 'B', taskId: 't1' },
    ]
    const onlyB = await recordingsOfTasks(db.database.db, keys, ['B'])
    expect([...onlyB.keys()]).toEqual(['B\u0000t1'])
    expect((await recordingsOfTasks(db.database.db, keys, [])).size).toBe(0)
  })
})
