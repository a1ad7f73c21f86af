import { and, eq, inArray, sql } from 'drizzle-orm'
import { type Db, resultRows } from '../database.client.js'
import { ShapedStatements } from '../statement.cache.js'
import { taskCounts } from '../tables/graph.table.js'

// The count's text per filter shape (see statement.cache.ts).
const keptStatements = new ShapedStatements()

/** What the kept counts can answer: the service code, the statuses and the caller's scope. */
export interface CountedFilter {
  serviceCode?: string | null | undefined
  status?: readonly string[] | null | undefined
  allowedServiceCodes?: readonly string[] | undefined
}

/**
 * How many tasks match, from the counts kept by the triggers on `tasks`: a few rows summed,
 * however many tasks are kept.
 */
export async function countTasksKept(db: Db, filter: CountedFilter): Promise<number> {
  const status = filter.status && filter.status.length > 0 ? filter.status : undefined
  const shape = `${filter.serviceCode ? 'c' : ''},${status?.length ?? ''},${filter.allowedServiceCodes?.length ?? ''}`
  const result = await keptStatements.run(
    db,
    shape,
    () => {
      const where = and(
        filter.serviceCode ? eq(taskCounts.serviceCode, filter.serviceCode) : undefined,
        status ? inArray(taskCounts.status, [...status]) : undefined,
        filter.allowedServiceCodes !== undefined
          ? inArray(taskCounts.serviceCode, [...filter.allowedServiceCodes])
          : undefined,
      )
      return sql`select coalesce(sum(${taskCounts.n}), 0)::float8 as n from ${taskCounts} where ${where ?? sql`true`}`
    },
    () => [
      ...(filter.serviceCode ? [filter.serviceCode] : []),
      ...(status ?? []),
      ...(filter.allowedServiceCodes ?? []),
    ],
  )
  return resultRows<{ n: number }>(result)[0]?.n ?? 0
}

/**
 * Folds the kept changes into one row per (service code, status), in one statement. Safe beside
 * writers: rows they append after this statement's snapshot are left for the next time. With a
 * limit, only that many rows are folded (any subset's sum is as good as the whole's), so the
 * statement takes a bounded time: a long one holds the cluster's oldest running transaction
 * back, and no reader of the log reads past it. Returns how many rows it folded.
 */
export async function compactTaskCounts(db: Db, limit?: number): Promise<number> {
  const some =
    limit === undefined ? sql`` : sql` where ctid = any(array(select ctid from ${taskCounts} limit ${limit}))`
  const result = await db.execute(sql`
    with gone as (delete from ${taskCounts}${some} returning service_code, status, n),
    kept as (
      insert into ${taskCounts} (service_code, status, n)
      select service_code, status, sum(n) from gone group by service_code, status having sum(n) <> 0
    )
    select count(*)::float8 as n from gone`)
  return resultRows<{ n: number }>(result)[0]?.n ?? 0
}
