/**
 * What the database can hold of a value that comes from outside (a callback's fields, a
 * `list_files` answer), in one place. A value past these limits makes its whole statement fail,
 * and a statement retried with the same value fails again: so such a value is refused or left out
 * where it enters (the callback's verdict, the answer's reading), never handed to a statement.
 * docs/callbacks.md and docs/archive.md state them.
 */

/** PostgreSQL `integer` (int4), and GraphQL's `Int`: a whole number of 32 bits. */
export const INT4_MIN = -2_147_483_648
export const INT4_MAX = 2_147_483_647

/**
 * The longest text a btree index is given, in UTF-8 bytes. An index entry may hold at most 2,704
 * bytes (a third of a page); a key such as (service_code, file_name) adds the code, and a
 * case-folded copy (the user name's prefix index) may be longer than its text. 1,024 leaves room
 * for both in any script, and is far longer than any task id, user name or file name the cloud makes.
 */
export const MAX_INDEXED_TEXT_BYTES = 1024

/**
 * The times `timestamptz` takes as livegate writes them (ISO 8601 text): years 1 to 9999. A later
 * year is written `+010000-…`, which PostgreSQL refuses.
 */
export const EARLIEST_STORED_TIME_MS = Date.parse('0001-01-01T00:00:00.000Z')
export const LATEST_STORED_TIME_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999)

const UTF8 = new TextEncoder()
// A surrogate half without its other half: UTF-8 cannot encode it, and jsonb refuses its escape.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/** Why a text cannot be stored as PostgreSQL `text` or inside `jsonb`, or undefined when it can. */
export function unstorableText(text: string): 'NUL' | 'LONE_SURROGATE' | undefined {
  if (text.includes('\u0000')) return 'NUL'
  if (LONE_SURROGATE.test(text)) return 'LONE_SURROGATE'
  return undefined
}

/** Whether a text fits a btree index entry ({@link MAX_INDEXED_TEXT_BYTES}); cheap for short texts. */
export function fitsIndex(text: string): boolean {
  // A UTF-16 unit is at most 3 bytes of UTF-8: only a long text needs counting.
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
