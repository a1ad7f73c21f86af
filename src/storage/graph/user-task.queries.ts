import { and, count, desc, getTableColumns, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../database.client.js'
import { type TaskRow, tasks } from '../tables/graph.table.js'
import { userKeyList } from '../tables/text.match.js'
import { type TaskKey, type TaskQuery, taskConditions } from './task.filter.js'
import { keysetAfter } from './task.queries.js'

/**
 * The tasks of users (`User.tasks` and its `totalCount`), for a page of users in one statement
 * each: the users' key list is one jsonb parameter, so the statement's text does not change with
 * how many users a page holds.
 */

/** A user's natural key. */
export interface UserKeyPair {
  serviceCode: string
  userName: string
}

/**
 * A page of each user's tasks (those they started), in one statement for any number of users:
 * a lateral subquery per user reads its newest tasks off `tasks_author_sort_idx` and stops at
 * `limit`. Keyed `serviceCode\u0000userName`; each list is newest start first.
 */
export async function tasksOfUsers(
  db: Db,
  owners: readonly UserKeyPair[],
  filter: TaskQuery,
  after: TaskKey | undefined,
  limit: number,
): Promise<Map<string, TaskRow[]>> {
  const byOwner = new Map<string, TaskRow[]>(owners.map((owner) => [userKey(owner), []]))
  if (owners.length === 0 || limit <= 0) return byOwner
  const wanted = sql`jsonb_to_recordset(${userKeyList(owners)}) as wanted(service_code text, user_name text)`
  const page = db
    .select()
    .from(tasks)
    .where(
      and(
        sql`${tasks.serviceCode} = wanted.service_code and ${tasks.author} = wanted.user_name`,
        taskConditions(filter),
        keysetAfter(after),
      ),
    )
    .orderBy(desc(tasks.sortAt), desc(tasks.id))
    .limit(limit)
    .as('page')
  const columns = Object.fromEntries(
    Object.keys(getTableColumns(tasks)).map((key) => [key, page[key as keyof typeof page]]),
  ) as unknown as Record<string, SQL.Aliased>
  const rows = (await db
    .select(columns)
    .from(wanted)
    .crossJoinLateral(page)
    .orderBy(desc(page.sortAt), desc(page.id))) as unknown as TaskRow[]
  for (const task of rows) {
    if (task.author !== null) byOwner.get(userKey({ serviceCode: task.serviceCode, userName: task.author }))?.push(task)
  }
  return byOwner
}

/** How many tasks of each user match the filter, in one statement. Keyed like {@link tasksOfUsers}. */
export async function countTasksOfUsers(
  db: Db,
  owners: readonly UserKeyPair[],
  filter: TaskQuery,
): Promise<Map<string, number>> {
  const counts = new Map<string, number>(owners.map((owner) => [userKey(owner), 0]))
  if (owners.length === 0) return counts
  const rows = await db
    .select({ serviceCode: tasks.serviceCode, author: tasks.author, n: count() })
    .from(tasks)
    .where(
      and(
        sql`(${tasks.serviceCode}, ${tasks.author}) in (select service_code, user_name from
          jsonb_to_recordset(${userKeyList(owners)}) as wanted(service_code text, user_name text))`,
        taskConditions(filter),
      ),
    )
    .groupBy(tasks.serviceCode, tasks.author)
  for (const row of rows)
    if (row.author !== null) counts.set(userKey({ serviceCode: row.serviceCode, userName: row.author }), row.n)
  return counts
}

/** The map key of a user in {@link tasksOfUsers} and {@link countTasksOfUsers}. */
export function userKey(user: UserKeyPair): string {
  return `${user.serviceCode}\u0000${user.userName}`
}
