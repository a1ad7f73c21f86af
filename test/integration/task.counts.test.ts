import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import fc from 'fast-check'
import { eq, inArray, sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TaskState } from '../../src/fold/task.fold.js'
import { resultRows } from '../../src/storage/database.client.js'
import { compactTaskCounts } from '../../src/storage/graph/task-count.statements.js'
import { countTasks, type TaskQuery } from '../../src/storage/graph/task.queries.js'
import { taskCounts, tasks } from '../../src/storage/tables/graph.table.js'
import { upsertJson } from '../../src/storage/tables/json.rows.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'

// totalCount of a page filtered by code and status reads the counts the triggers on `tasks` keep
// (migration 0008) instead of counting the tasks. They must say what counting says after every
// kind of write: inserts, upserts that move a task's status and insert others in one statement,
// deletes, the projector's compaction, and a database migrated from before the counts existed.

const CODES = ['A', 'B', 'C']
const STATUSES = ['LIVE', 'WAITING_RECONNECT', 'ENDED', 'WAITING']
const T0 = Date.UTC(2026, 0, 1)

const counted = fc.record(
  {
    serviceCode: fc.constantFrom(...CODES),
    status: fc.subarray(STATUSES),
    allowedServiceCodes: fc.subarray(CODES),
  },
  { requiredKeys: [] },
)
const FILTERS: TaskQuery[] = [{}, ...fc.sample(counted, { numRuns: 60, seed: 2611 })]

const row = (serviceCode: string, index: number, status: string) => {
  const at = new Date(T0 + index * 60_000)
  return {
    serviceCode,
    taskId: `t${index}`,
    state: {} as TaskState,
    node: null,
    status,
    endReason: null,
    author: null,
    listed: true,
    sortAt: at,
    updatedAt: at,
  }
}

describe(`task counts kept by triggers (${driverName})`, () => {
  let db: TestDatabase

  beforeAll(async () => {
    db = await openTestDatabase()
  })

  afterAll(async () => {
    await db?.drop()
  })

  // Every filter, from the kept counts (countTasks) and by counting the rows (a filter with a
  // user name takes the counting path, so the tasks are counted by the same function both ways).
  async function expectCountsTrue(): Promise<void> {
    const all = resultRows<{ service_code: string; status: string }>(
      await db.database.db.execute(sql`select service_code, status from tasks`),
    )
    for (const filter of FILTERS) {
      const matching = all.filter(
        (task) =>
          (!filter.serviceCode || task.service_code === filter.serviceCode) &&
          (!filter.status?.length || filter.status.includes(task.status)) &&
          (filter.allowedServiceCodes === undefined || filter.allowedServiceCodes.includes(task.service_code)),
      )
      expect(await countTasks(db.database.db, filter), JSON.stringify(filter)).toBe(matching.length)
    }
  }

  it('count inserts, upserts that move statuses, and deletes, statement by statement', async () => {
    const { db: d } = db.database
    const rows = Array.from({ length: 30 }, (_, index) =>
      row(CODES[index % 3] as string, index, STATUSES[index % 4] as string),
    )
    await d.insert(tasks).values(rows.slice(0, 20))
    await expectCountsTrue()
    // One statement as the projector writes: ten tasks move to another status, ten are new.
    const moved = [
      ...rows.slice(10, 20).map((r, i) => ({ ...r, status: STATUSES[(i + 1) % 4] as string })),
      ...rows.slice(20),
    ]
    const set = sql.raw('status = excluded.status, updated_at = excluded.updated_at')
    await d.execute(upsertJson(tasks, moved, { target: ['service_code', 'task_id'], set }))
    await expectCountsTrue()
    // An upsert that moves nothing appends nothing.
    const before = await d.$count(taskCounts)
    await d.execute(upsertJson(tasks, moved, { target: ['service_code', 'task_id'], set }))
    expect(await d.$count(taskCounts)).toBe(before)
    await d.update(tasks).set({ status: 'ENDED' }).where(eq(tasks.serviceCode, 'B'))
    await d.delete(tasks).where(inArray(tasks.taskId, ['t0', 't4', 't8', 't25']))
    await expectCountsTrue()
  })

  it('a compaction bounded to a few rows folds only those, and the counts stay true', async () => {
    const { db: d } = db.database
    const before = await d.$count(taskCounts)
    expect(before).toBeGreaterThan(12)
    expect(await compactTaskCounts(d, 5)).toBe(5)
    expect(await d.$count(taskCounts)).toBeGreaterThan(before - 5)
    await expectCountsTrue()
  })

  it('the compaction leaves one row per code and status, and the same counts', async () => {
    const { db: d } = db.database
    expect(await d.$count(taskCounts)).toBeGreaterThan(12)
    expect(await compactTaskCounts(d)).toBeGreaterThan(12)
    const pairs = resultRows<{ n: number }>(
      await d.execute(sql`select count(distinct (service_code, status))::float8 as n from tasks`),
    )[0]?.n
    expect(await d.$count(taskCounts)).toBe(pairs)
    await expectCountsTrue()
    await d.insert(tasks).values([row('C', 100, 'LIVE')])
    await compactTaskCounts(d)
    await expectCountsTrue()
  })

  it('a database migrated from before the counts counts the tasks it already holds', async () => {
    const { db: d } = db.database
    // Back to the schema before migration 0008, with tasks of its time, then started again.
    await d.execute(sql`drop table task_counts`)
    await d.execute(sql`drop function task_counts_added, task_counts_moved, task_counts_removed cascade`)
    const journal = JSON.parse(
      readFileSync(new URL('../../schema/migrations/meta/_journal.json', import.meta.url), 'utf8'),
    ) as { entries: Array<{ tag: string; when: number }> }
    const since = journal.entries.find((entry) => entry.tag === '0008_task_counts')?.when
    await d.execute(sql`delete from drizzle.__drizzle_migrations where created_at >= ${since}`)
    await d.insert(tasks).values([row('A', 200, 'LIVE'), row('A', 201, 'ENDED')])
    // Migrated up to 0008 alone: the migrations after it changed other tables, which stay as they are.
    await migrateThrough(d, '0008_task_counts')
    await expectCountsTrue()
    await d.update(tasks).set({ status: 'WAITING' }).where(eq(tasks.taskId, 't200'))
    await expectCountsTrue()
  })
})

/** Applies the committed migrations up to `tag`, as the driver's migrator would at a start. */
async function migrateThrough(d: TestDatabase['database']['db'], tag: string): Promise<void> {
  const folder = mkdtempSync(join(tmpdir(), 'livegate-migrations-'))
  try {
    cpSync(fileURLToPath(new URL('../../schema/migrations', import.meta.url)), folder, { recursive: true })
    const journalPath = join(folder, 'meta', '_journal.json')
    const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: Array<{ tag: string }> }
    const last = journal.entries.findIndex((entry) => entry.tag === tag)
    writeFileSync(journalPath, JSON.stringify({ ...journal, entries: journal.entries.slice(0, last + 1) }))
    // The two drivers' migrators take their own database types; `d` is whichever this run opened.
    const { migrate } =
      driverName === 'postgres'
        ? await import('drizzle-orm/postgres-js/migrator')
        : await import('drizzle-orm/pglite/migrator')
    await (migrate as (db: unknown, config: { migrationsFolder: string }) => Promise<void>)(d, {
      migrationsFolder: folder,
    })
  } finally {
    rmSync(folder, { recursive: true, force: true })
  }
}
