import { describe, expect } from 'vitest'
import { recordAction } from '../../src/storage/outbound/action.statements.js'
import { actions } from '../../src/storage/tables/action.table.js'
import { RetentionJob } from '../../src/work/retention.job.js'
import { driverName } from '../support/database.fixture.js'
import { test } from '../support/gateway.fixture.js'

const DAY_MS = 86_400_000
const silent = { info: () => {}, debug: () => {}, warn: () => {} }

describe(`the audit of actions under retention on ${driverName}`, () => {
  test('actions asked for more than actions.retention days ago are pruned; younger ones and a 0 keep theirs', async ({
    db,
  }) => {
    const now = new Date('2026-06-01T00:00:00Z')
    const at = (daysAgo: number) => new Date(now.getTime() - daysAgo * DAY_MS)
    for (const [taskId, daysAgo] of [
      ['old', 401],
      ['young', 399],
    ] as const) {
      await recordAction(
        db.database.db,
        {
          kind: 'STOP_TASK',
          serviceCode: 'TESTING',
          taskId,
          argsHash: taskId,
          keyScope: '',
          state: 'SUCCEEDED',
          requestedAt: at(daysAgo),
        },
        now,
      )
    }
    const retention = { callbacksDays: 0, refusalsDays: 0, intervalMs: 0, batchSize: 1 }
    const kept = new RetentionJob({
      db: db.database.db,
      retention,
      actionsRetentionDays: 0,
      log: silent,
      now: () => now,
    })
    expect(await kept.runOnce()).toEqual([])
    const job = new RetentionJob({
      db: db.database.db,
      retention,
      actionsRetentionDays: 400,
      log: silent,
      now: () => now,
    })
    const [result] = await job.runOnce()
    expect(result).toMatchObject({ table: 'actions', deleted: 1, cutoff: at(400) })
    const left = await db.database.db.select({ taskId: actions.taskId }).from(actions)
    expect(left).toEqual([{ taskId: 'young' }])
  })
})
