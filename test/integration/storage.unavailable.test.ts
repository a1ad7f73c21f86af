import { randomUUID } from 'node:crypto'
import { describe, expect } from 'vitest'
import { callbacks } from '../../src/db/callback.table.js'
import { openDatabase } from '../../src/db/database.client.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName } from '../support/database.fixture.js'
import { test } from '../support/gateway.fixture.js'

describe(`storage unavailable (${driverName})`, () => {
  test('a callback the database cannot take is answered 503, and what was kept stays kept', async ({ deliver, db }) => {
    const kept = sampleCallbacks(randomUUID()).liveStart as Record<string, string>
    expect((await deliver(kept)).status).toBe(200)

    await db.database.close()
    const answer = await deliver(sampleCallbacks(randomUUID()).liveEnd as Record<string, string>)
    expect(answer.status, answer.text).toBe(503)
    expect(answer.body).toMatchObject({ ret: 50301, code: 'STORAGE_UNAVAILABLE' })
    expect(answer.text).not.toMatch(/stack|at .*\.ts:\d+/)

    // The row answered 200 before the fault is still there (on a server, seen through a new pool).
    if (db.url) {
      const reopened = await openDatabase({ url: db.url, dataDir: 'memory://' })
      const rows = await reopened.db.select({ taskId: callbacks.taskId }).from(callbacks)
      await reopened.close()
      expect(rows).toEqual([{ taskId: kept.hashed_id }])
    }
  })
})
