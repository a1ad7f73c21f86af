import { and, count, desc, eq, inArray, lt, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../database.client.js'
import { type UserRow, users } from '../tables/graph.table.js'
import { foldCaseSql, prefixPattern, userKeyList } from '../tables/text.match.js'

/** The `users` query's filter, already validated. */
export interface UserQuery {
  serviceCode?: string | null | undefined
  /** A–Z case-insensitive prefix of the user name (see text.match.ts). */
  userName?: string | null | undefined
  online?: boolean | null | undefined
  /** The caller's scope: only these service codes (undefined: all). */
  allowedServiceCodes?: readonly string[] | undefined
  /** The caller's scope: only this user (a broadcaster's own view; undefined: every user). */
  allowedUserName?: string | undefined
}

function userConditions(filter: UserQuery): SQL | undefined {
  return and(
    filter.serviceCode ? eq(users.serviceCode, filter.serviceCode) : undefined,
    filter.userName ? sql`${foldCaseSql(users.userName)} like ${prefixPattern(filter.userName)}` : undefined,
    filter.online === true || filter.online === false ? eq(users.online, filter.online) : undefined,
    filter.allowedServiceCodes !== undefined ? inArray(users.serviceCode, [...filter.allowedServiceCodes]) : undefined,
    filter.allowedUserName !== undefined ? eq(users.userName, filter.allowedUserName) : undefined,
  )
}

/** A page of users, most recently known first (by row id, so pages never shift). */
export function listUsers(db: Db, filter: UserQuery, afterId: number | undefined, limit: number): Promise<UserRow[]> {
  return db
    .select()
    .from(users)
    .where(and(userConditions(filter), afterId === undefined ? undefined : lt(users.id, afterId)))
    .orderBy(desc(users.id))
    .limit(limit)
}

/** How many users match the filter. */
export async function countUsers(db: Db, filter: UserQuery): Promise<number> {
  const [row] = await db.select({ n: count() }).from(users).where(userConditions(filter))
  return row?.n ?? 0
}

/** The users with these (service code, user name) pairs, in one statement; only those in scope when one is given. */
export function usersByKeys(
  db: Db,
  keys: ReadonlyArray<{ serviceCode: string; userName: string }>,
  allowedServiceCodes?: readonly string[],
  allowedUserName?: string,
): Promise<UserRow[]> {
  if (keys.length === 0) return Promise.resolve([])
  return db
    .select()
    .from(users)
    .where(
      and(
        sql`(${users.serviceCode}, ${users.userName}) in (select service_code, user_name from
          jsonb_to_recordset(${userKeyList(keys)}) as wanted(service_code text, user_name text))`,
        userConditions({ allowedServiceCodes, allowedUserName }),
      ),
    )
}
