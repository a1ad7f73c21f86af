import { and, count, desc, eq, inArray, lt, type SQL } from 'drizzle-orm'
import type { Db } from './database.client.js'
import { type UserRow, users } from './graph.table.js'

/** The `users` query's filter, already validated. */
export interface UserQuery {
  serviceCode?: string | null | undefined
  userName?: string | null | undefined
  online?: boolean | null | undefined
  /** The caller's scope: only these service codes (undefined: all). */
  allowedServiceCodes?: readonly string[] | undefined
}

function userConditions(filter: UserQuery): SQL | undefined {
  return and(
    filter.serviceCode ? eq(users.serviceCode, filter.serviceCode) : undefined,
    filter.userName ? eq(users.userName, filter.userName) : undefined,
    filter.online === true || filter.online === false ? eq(users.online, filter.online) : undefined,
    filter.allowedServiceCodes !== undefined ? inArray(users.serviceCode, [...filter.allowedServiceCodes]) : undefined,
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
