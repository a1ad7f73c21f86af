import { type AnyColumn, type SQL, sql } from 'drizzle-orm'
import { jsonParameter } from './json.rows.js'

/**
 * How the user-name filters match: a case-insensitive prefix, as a search box expects, where
 * "case" is the letters A–Z only. PostgreSQL's `lower()` follows the database's locale (only
 * ASCII under C, all of Unicode under en_US), so a fold of A–Z alone is the one the SQL and the
 * subscriptions' in-memory matching agree on, on every database.
 */
const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ'
const LOWER = 'abcdefghijklmnopqrstuvwxyz'

/** Text with A–Z in lower case; every other character as it is. */
export function foldCase(text: string): string {
  return text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase())
}

/** {@link foldCase} in SQL, for a column (the expression the prefix indexes are built on). */
export function foldCaseSql(column: AnyColumn): SQL {
  return sql`translate(${column}, ${sql.raw(`'${UPPER}'`)}, ${sql.raw(`'${LOWER}'`)})`
}

/** A LIKE pattern matching text that starts with `prefix` (folded), with `%`, `_` and `\` taken literally. */
export function prefixPattern(prefix: string): string {
  return `${foldCase(prefix).replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

/**
 * (service code, user name) pairs as one jsonb parameter (a statement text that does not change with them), for
 * `jsonb_to_recordset(…) as wanted(service_code text, user_name text)`.
 */
export function userKeyList(keys: ReadonlyArray<{ serviceCode: string; userName: string }>): SQL {
  return jsonParameter(keys.map((key) => ({ service_code: key.serviceCode, user_name: key.userName })))
}
