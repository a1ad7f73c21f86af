import { z } from 'zod'
import { fitsIndex, isInt4, isStorableTime, unstorableText } from './stored.limits.js'

/**
 * The management function `list_files` (operations.md): what livegate asks for, and its answer
 * read into plain values. Every value of an item comes typed, as a key-value store writes it:
 * `{"S": "text"}` or `{"N": "123"}` (the number as text).
 */

/** The fields livegate asks for, in the order the upstream's demo names them. */
export const LIST_FILES_FIELDS = [
  'file_name',
  'created_at',
  'duration',
  'width',
  'height',
  'user_name',
  'description',
  'url',
  'location',
  'access_cnt',
  'zan_cnt',
] as const

/** The management body of `list_files` for the newest `limit` files. */
export function listFilesBody(limit: number): { function: 'list_files'; params: Record<string, unknown> } {
  return { function: 'list_files', params: { fields: LIST_FILES_FIELDS.join(','), limit, order_asc: 0 } }
}

/** One listed file, its values read. */
export interface ListedFile {
  fileName: string
  /** When it was recorded (`created_at`, Unix seconds). */
  createdAt: Date | null
  duration: number | null
  width: number | null
  height: number | null
  userName: string | null
  description: string | null
  url: string | null
  location: string | null
  /** `access_cnt`: how many times it was watched. */
  views: number | null
  /** `zan_cnt`: how many likes it has. */
  likes: number | null
}

const typedValue = z.union([z.strictObject({ S: z.string() }), z.strictObject({ N: z.string().max(40) })])
const itemSchema = z.record(z.string(), typedValue)

/** A successful answer: its `items`, each a record of typed values. */
export const listFilesAnswerSchema = z.object({ items: z.array(itemSchema).max(100_000).default([]) })

/** One item of an answer: its values by field name, each typed. */
export type ListedItem = Record<string, { S: string } | { N: string }>

/** Why a file, or one of its values, was left out of the catalogue. */
export type LeftOutReason = 'NUL' | 'LONE_SURROGATE' | 'TOO_LONG' | 'OUT_OF_RANGE' | 'OVER_LIMIT' | 'REFUSED'

/**
 * What an answer held that the catalogue cannot: a whole file (`file`: its name cannot be a key, or
 * it came past the files asked for) or one value of a file kept without it (`value`), counted.
 */
export interface LeftOut {
  what: 'file' | 'value'
  field: string
  reason: LeftOutReason
  count: number
}

/** Tallies what was left out, by what, field and reason. */
export class LeftOutTally {
  private readonly counts = new Map<string, LeftOut>()

  add(what: LeftOut['what'], field: string, reason: LeftOutReason, count = 1): void {
    const key = `${what}/${field}/${reason}`
    const known = this.counts.get(key)
    if (known) known.count += count
    else this.counts.set(key, { what, field, reason, count })
  }

  list(): LeftOut[] {
    return [...this.counts.values()]
  }
}

/** What was left out, in words: `2 files (file_name: NUL), 1 value (access_cnt: OUT_OF_RANGE)`. */
export function describeLeftOut(leftOut: readonly LeftOut[]): string {
  return leftOut
    .map((part) => `${part.count} ${part.what}${part.count === 1 ? '' : 's'} (${part.field}: ${part.reason})`)
    .join(', ')
}

/**
 * What {@link readListFilesAnswer} made of an answer: its files and what was left out of them
 * (`listed` is how many items it held), or why it is no list_files answer.
 */
export type ReadAnswer = { files: ListedFile[]; listed: number; leftOut: LeftOut[] } | { problem: string }

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

// Exactly `{"S": text}` or `{"N": text of at most 40}`, as the schema's union of strict objects says.
function isTypedValue(value: unknown): boolean {
  if (!isRecord(value)) return false
  let keys = 0
  for (const key in value) {
    if (key !== 'S' && key !== 'N') return false
    keys++
  }
  if (keys !== 1) return false
  return value.S !== undefined ? typeof value.S === 'string' : typeof value.N === 'string' && value.N.length <= 40
}

// A well-formed answer by hand, in one pass and without a copy: it accepts only what the schema
// accepts. zod's union of strict objects, over 100 items of 11 values, was most of an answer's work.
function wellFormedItems(json: unknown): unknown[] | undefined {
  if (!isRecord(json)) return undefined
  const { items } = json
  if (items === undefined) return []
  if (!Array.isArray(items) || items.length > 100_000) return undefined
  for (const item of items) {
    if (!isRecord(item)) return undefined
    for (const key in item) if (!isTypedValue(item[key])) return undefined
  }
  return items
}

/**
 * An answer's files, read: a well-formed answer by the hand check, anything else by the schema,
 * whose first issue says why it is refused. A file the same answer names twice is kept once (its
 * last listing). Items past the `limit` asked for are left out unread (the newest come first), so
 * an answer's work is bounded by what was asked, whatever the cloud sends; and what the database
 * cannot hold (model/stored.limits.ts) is left out where it enters, a file or one of its values.
 */
export function readListFilesAnswer(json: unknown, limit?: number): ReadAnswer {
  const tally = new LeftOutTally()
  let listed = 0
  if (isRecord(json) && Array.isArray(json.items)) {
    listed = json.items.length
    if (limit !== undefined && listed > limit) {
      tally.add('file', 'items', 'OVER_LIMIT', listed - limit)
      json = { ...json, items: json.items.slice(0, limit) }
    }
  }
  let items = wellFormedItems(json) as ListedItem[] | undefined
  if (!items) {
    const parsed = listFilesAnswerSchema.safeParse(json)
    if (!parsed.success) {
      const issue = parsed.error.issues[0]
      const where = issue && issue.path.length > 0 ? `${issue.path.map(String).join('.')}: ` : ''
      return { problem: `${where}${issue?.message ?? 'invalid'}` }
    }
    items = parsed.data.items
  }
  // The same name twice would make the one statement that stores an answer touch a row twice.
  const byName = new Map<string, ListedFile>()
  for (const item of items) {
    const file = readListedFile(item, tally)
    if (file) byName.set(file.fileName, file)
  }
  return { files: [...byName.values()], listed, leftOut: tally.list() }
}

const raw = (item: ListedItem, name: string): string | null => {
  const value = item[name]
  if (!value) return null
  return 'S' in value ? value.S : value.N
}

// A text the database can hold, else null (told to the tally).
const text = (item: ListedItem, name: string, tally?: LeftOutTally): string | null => {
  const value = raw(item, name)
  const unstorable = value === null ? undefined : unstorableText(value)
  if (!unstorable) return value
  tally?.add('value', name, unstorable)
  return null
}

const number = (item: ListedItem, name: string): number | null => {
  const value = raw(item, name)
  if (value === null || value.trim() === '') return null
  const n = Number(value)
  return Number.isFinite(n) ? n : null
}

// A whole number an `integer` column holds, else null (told to the tally when it was one).
const whole = (item: ListedItem, name: string, tally?: LeftOutTally): number | null => {
  const n = number(item, name)
  if (n === null || !Number.isSafeInteger(Math.trunc(n))) return null
  if (isInt4(Math.trunc(n))) return Math.trunc(n)
  tally?.add('value', name, 'OUT_OF_RANGE')
  return null
}

// `created_at`: only seconds are documented; a 13-digit value is read as milliseconds rather than
// the year 50000. A time `timestamptz` cannot take as written (past the year 9999) is null.
function createdAtOf(n: number | null, tally?: LeftOutTally): Date | null {
  if (n === null || !Number.isSafeInteger(Math.trunc(n))) return null
  const seconds = Math.trunc(n)
  const at = new Date(seconds > 100_000_000_000 ? seconds : seconds * 1000)
  if (Number.isFinite(at.getTime()) && isStorableTime(at)) return at
  tally?.add('value', 'created_at', 'OUT_OF_RANGE')
  return null
}

/**
 * An item's values read: texts from `S`, numbers from `N`. A file without a name is no file, nor
 * one whose name the catalogue cannot key (NUL, a lone surrogate, longer than an index entry); a
 * value the database cannot hold is null. Either is told to `tally`.
 */
export function readListedFile(item: ListedItem, tally?: LeftOutTally): ListedFile | undefined {
  const fileName = raw(item, 'file_name')
  if (!fileName) return undefined
  const unkeyable = unstorableText(fileName) ?? (fitsIndex(fileName) ? undefined : 'TOO_LONG')
  if (unkeyable) {
    tally?.add('file', 'file_name', unkeyable)
    return undefined
  }
  const createdAt = createdAtOf(number(item, 'created_at'), tally)
  let userName = text(item, 'user_name', tally) || null
  if (userName !== null && !fitsIndex(userName)) {
    tally?.add('value', 'user_name', 'TOO_LONG')
    userName = null
  }
  return {
    fileName,
    createdAt,
    duration: number(item, 'duration'),
    width: whole(item, 'width', tally),
    height: whole(item, 'height', tally),
    userName,
    description: text(item, 'description', tally),
    url: text(item, 'url', tally) || null,
    location: text(item, 'location', tally),
    views: whole(item, 'access_cnt', tally),
    likes: whole(item, 'zan_cnt', tally),
  }
}
