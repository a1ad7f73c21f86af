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

/** Told of what an answer held that the catalogue cannot: a whole `file`, or one `value` of a file kept without it. */
export type TellLeftOut = (what: 'file' | 'value', field: string, reason: LeftOutReason, count?: number) => void

/** What {@link readListFilesAnswer} made of an answer: its files and how many it `listed`, or its problem. */
export type ReadAnswer = { files: ListedFile[]; listed: number } | { problem: string }

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
 * an answer's work is bounded by what was asked; what the database cannot hold is left out here.
 */
export function readListFilesAnswer(json: unknown, limit?: number, tell?: TellLeftOut): ReadAnswer {
  const listed = isRecord(json) && Array.isArray(json.items) ? json.items.length : 0
  if (isRecord(json) && Array.isArray(json.items) && limit !== undefined && listed > limit) {
    tell?.('file', 'items', 'OVER_LIMIT', listed - limit)
    json = { ...json, items: json.items.slice(0, limit) }
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
    const file = readListedFile(item, tell)
    if (file) byName.set(file.fileName, file)
  }
  return { files: [...byName.values()], listed }
}

const raw = (item: ListedItem, name: string): string | null => {
  const value = item[name]
  if (!value) return null
  return 'S' in value ? value.S : value.N
}

// A text the database can hold, else null (told to `tell`).
const text = (item: ListedItem, name: string, tell?: TellLeftOut): string | null => {
  const value = raw(item, name)
  const unstorable = value === null ? undefined : unstorableText(value)
  if (unstorable) tell?.('value', name, unstorable)
  return unstorable ? null : value
}

const number = (item: ListedItem, name: string): number | null => {
  const value = raw(item, name)
  if (value === null || value.trim() === '') return null
  const n = Number(value)
  return Number.isFinite(n) ? n : null
}

// A whole number an `integer` column holds, else null (told to `tell` when it was one).
const whole = (item: ListedItem, name: string, tell?: TellLeftOut): number | null => {
  const n = number(item, name)
  if (n === null || !Number.isSafeInteger(Math.trunc(n))) return null
  if (!isInt4(Math.trunc(n))) tell?.('value', name, 'OUT_OF_RANGE')
  return isInt4(Math.trunc(n)) ? Math.trunc(n) : null
}

// `created_at`: only seconds are documented; a 13-digit value is read as milliseconds rather than
// the year 50000. A time `timestamptz` cannot take as written (past the year 9999) is null.
function createdAtOf(n: number | null, tell?: TellLeftOut): Date | null {
  if (n === null || !Number.isSafeInteger(Math.trunc(n))) return null
  const at = new Date(Math.trunc(n) > 100_000_000_000 ? Math.trunc(n) : Math.trunc(n) * 1000)
  if (!isStorableTime(at)) tell?.('value', 'created_at', 'OUT_OF_RANGE')
  return isStorableTime(at) ? at : null
}

/**
 * An item's values read: texts from `S`, numbers from `N`. A file without a name is no file, nor one whose name
 * cannot be a key (NUL, a lone surrogate, too long); a value the database cannot hold is null. Both told to `tell`.
 */
export function readListedFile(item: ListedItem, tell?: TellLeftOut): ListedFile | undefined {
  const fileName = raw(item, 'file_name')
  if (!fileName) return undefined
  const unkeyable = unstorableText(fileName) ?? (fitsIndex(fileName) ? undefined : 'TOO_LONG')
  if (unkeyable) return void tell?.('file', 'file_name', unkeyable)
  const userName = text(item, 'user_name', tell) || null
  if (userName !== null && !fitsIndex(userName)) tell?.('value', 'user_name', 'TOO_LONG')
  return {
    fileName,
    createdAt: createdAtOf(number(item, 'created_at'), tell),
    duration: number(item, 'duration'),
    width: whole(item, 'width', tell),
    height: whole(item, 'height', tell),
    userName: userName !== null && fitsIndex(userName) ? userName : null,
    description: text(item, 'description', tell),
    url: text(item, 'url', tell) || null,
    location: text(item, 'location', tell),
    views: whole(item, 'access_cnt', tell),
    likes: whole(item, 'zan_cnt', tell),
  }
}
