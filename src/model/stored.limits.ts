/**
 * What the database can hold of a value from outside (a callback's fields, a `list_files` answer),
 * in one place. A value past these limits fails its whole statement at every try, so it is refused
 * or left out where it enters (the verdict, the answer's reading). docs/callbacks.md states them.
 */

/** PostgreSQL `integer` (int4), and GraphQL's `Int`. */
export const [INT4_MIN, INT4_MAX] = [-2_147_483_648, 2_147_483_647]

/**
 * The longest text a btree index is given, in UTF-8 bytes: an entry holds at most 2,704 bytes, a
 * key such as (service_code, file_name) adds the code, and a case-folded copy (a user name's prefix
 * index) may be longer than its text. Far longer than any id or name the cloud makes.
 */
export const MAX_INDEXED_TEXT_BYTES = 1024

/** The times `timestamptz` takes as livegate writes them (ISO 8601): years 1 to 9999 (later is `+010000-…`). */
export const EARLIEST_STORED_TIME_MS = Date.parse('0001-01-01T00:00:00.000Z')
export const LATEST_STORED_TIME_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999)

const UTF8 = new TextEncoder()
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** Why a text cannot be `text` or in `jsonb` (a lone surrogate has no UTF-8), or undefined when it can. */
export function unstorableText(text: string): 'NUL' | 'LONE_SURROGATE' | undefined {
  if (text.includes('\u0000')) return 'NUL'
  return LONE_SURROGATE.test(text) ? 'LONE_SURROGATE' : undefined
}

/** Whether a text fits a btree index entry; a UTF-16 unit is at most 3 bytes, so only a long text is counted. */
export function fitsIndex(text: string): boolean {
  return text.length * 3 <= MAX_INDEXED_TEXT_BYTES || UTF8.encode(text).length <= MAX_INDEXED_TEXT_BYTES
}

/** Whether a number is a whole number an `integer` column (and GraphQL's `Int`) holds. */
export function isInt4(value: number): boolean {
  return Number.isInteger(value) && value >= INT4_MIN && value <= INT4_MAX
}

/** Whether a time can be written to a `timestamptz` column. */
export function isStorableTime(date: Date): boolean {
  const ms = date.getTime()
  return ms >= EARLIEST_STORED_TIME_MS && ms <= LATEST_STORED_TIME_MS
}
