import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { TaskState } from '../../src/fold/task.fold.js'
import { tasks } from '../../src/storage/tables/graph.table.js'
import {
  listTasks,
  type TaskQuery,
  taskMatches,
  taskStatementMismatches,
} from '../../src/storage/graph/task.queries.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'

// A task filter is written twice: as SQL for the lists (task.queries.ts taskConditions) and as a
// function for rows already read (taskMatches: the hub's taskChanged groups). They must agree on
// every filter and every row: random filters over random tasks, both ways, the same tasks.

const CODES = ['A', 'B', 'C']
const USERS = ['alice', 'Alina', 'bob', 'ZOË', 'al', 'Bo']
const STATUSES = ['LIVE', 'WAITING_RECONNECT', 'ENDED', 'WAITING']
const SERVERS = ['vs-1', 'vs-2', '7']
const T0 = Date.UTC(2026, 0, 1)

interface Row {
  serviceCode: string
  taskId: string
  status: string
  author: string | null
  sortAt: Date
  state: TaskState
}

const rowArbitrary = (index: number) =>
  fc
    .record({
      serviceCode: fc.constantFrom(...CODES),
      status: fc.constantFrom(...STATUSES),
      author: fc.option(fc.constantFrom(...USERS), { nil: null }),
      minutes: fc.integer({ min: 0, max: 120 }),
      // The server a task is on: from the latest callback, else from the task list, else none.
      vsFromCallback: fc.option(fc.constantFrom(...SERVERS), { nil: undefined }),
      vsFromList: fc.option(fc.constantFrom(...SERVERS), { nil: undefined }),
    })
    .map(
      ({ serviceCode, status, author, minutes, vsFromCallback, vsFromList }): Row => ({
        serviceCode,
        taskId: `t${index}`,
        status,
        author,
        sortAt: new Date(T0 + minutes * 60_000),
        state: {
          ...(vsFromCallback !== undefined ? { vsId: { value: vsFromCallback } } : {}),
          sighting: vsFromList !== undefined ? { task: { value: { vs_id: vsFromList } } } : {},
        } as unknown as TaskState,
      }),
    )

const some = <T>(values: readonly T[]) => fc.option(fc.subarray([...values]), { nil: undefined })
const filterArbitrary: fc.Arbitrary<TaskQuery> = fc.record(
  {
    serviceCode: fc.constantFrom(...CODES),
    status: fc.subarray(STATUSES),
    keys: fc.array(fc.tuple(fc.constantFrom(...CODES), fc.constantFrom('t0', 't1', 't2', 't3', 't9')), {
      maxLength: 3,
    }),
    taskIds: fc.subarray(['t0', 't1', 't2', 't3', 't4', 't9']),
    userName: fc.constantFrom('al', 'AL', 'b', 'zo', 'Zoë', 'x'),
    owners: fc.array(fc.tuple(fc.constantFrom(...CODES), fc.constantFrom(...USERS)), { maxLength: 3 }),
    vsId: fc.constantFrom(...SERVERS),
    startedFrom: fc.integer({ min: 0, max: 120 }).map((m) => new Date(T0 + m * 60_000)),
    startedTo: fc.integer({ min: 0, max: 120 }).map((m) => new Date(T0 + m * 60_000)),
    allowedServiceCodes: some(CODES),
  },
  { requiredKeys: [] },
)

describe(`task filters: the SQL and taskMatches agree (${driverName})`, () => {
  let db: TestDatabase
  let rows: Row[]

  beforeAll(async () => {
    db = await openTestDatabase()
    rows = fc.sample(fc.tuple(...Array.from({ length: 40 }, (_, index) => rowArbitrary(index))), {
      numRuns: 1,
      seed: 2511,
    })[0] as Row[]
    await db.database.db.insert(tasks).values(rows.map((row) => ({ ...row, listed: true, updatedAt: row.sortAt })))
  })

  afterAll(async () => {
    await db?.drop()
  })

  it('on random filters over random tasks', async () => {
    await fc.assert(
      fc.asyncProperty(filterArbitrary, async (filter) => {
        const listed = await listTasks(db.database.db, filter, undefined, 1000, [])
        const bySql = listed.map((row) => `${row.serviceCode}/${row.taskId}`).sort()
        const byFunction = rows
          .filter((row) => taskMatches(filter, row))
          .map((row) => `${row.serviceCode}/${row.taskId}`)
          .sort()
        expect(bySql).toEqual(byFunction)
        // Again: the text kept for the filter's shape now, with only the values bound.
        expect(await listTasks(db.database.db, filter, undefined, 1000, [])).toEqual(listed)
      }),
      { numRuns: 300, seed: 2511 },
    )
    // Every shape's listed values were Drizzle's own, so every shape was kept (statement.cache.ts).
    expect(taskStatementMismatches()).toBe(0)
  })
})
