import { readFileSync } from 'node:fs'
import { asc, sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { recordings } from '../../src/storage/tables/recording.table.js'
import { seedTasks } from '../bench/query.seed.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'

// Migration 0012's last statement: every type 2 the projection kept, into the catalogue.
const BACKFILL = (
  readFileSync(new URL('../../schema/migrations/0012_recording_callback.sql', import.meta.url), 'utf8')
    .split('--> statement-breakpoint')
    .at(-1) ?? ''
).trim()

// What the projector writes of a type 2, the migration gives back from the stored nodes alone.
describe(`migration 0012's backfill of the catalogue, on ${driverName}`, () => {
  let db: TestDatabase

  beforeAll(async () => {
    db = await openTestDatabase()
    await seedTasks(db.database, 6)
  })
  afterAll(async () => {
    await db?.drop()
  })

  const callbackParts = async () =>
    (await db.database.db.select().from(recordings).orderBy(asc(recordings.serviceCode), asc(recordings.fileName))).map(
      (row) => ({
        ...{
          serviceCode: row.serviceCode,
          fileName: row.fileName,
          taskId: row.taskId,
          userName: row.userName,
          url: row.url,
        },
        ...{ duration: row.duration, width: row.width, height: row.height, outputIndex: row.outputIndex, tag: row.tag },
        ...{ path: row.path, format: row.format, inputBytes: row.inputBytes, httpOutputBytes: row.httpOutputBytes },
        ...{ liveStartedAt: row.liveStartedAt, receivedAt: row.receivedAt, fromCallback: row.fromCallback },
      }),
    )

  it('gives back every recording, with its type 2 parts, and changes nothing run again', async () => {
    expect(BACKFILL).toMatch(/^-- Every type 2/)
    const written = await callbackParts()
    expect(written.length).toBeGreaterThan(2)
    await db.database.db.execute(sql`delete from recordings`)
    await db.database.db.execute(sql.raw(BACKFILL))
    expect(await callbackParts()).toEqual(written)
    await db.database.db.execute(sql.raw(BACKFILL))
    expect(await callbackParts()).toEqual(written)
  })
})
