import { z } from 'zod'

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

/** What {@link readListFilesAnswer} made of an answer: its files, or why it is no list_files answer. */
export type ReadAnswer = { files: ListedFile[] } | { problem: string }

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
 * last listing), and a name over 1,000 characters is no file.
 */
export function readListFilesAnswer(json: unknown): ReadAnswer {
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
    const file = readListedFile(item)
    if (file && file.fileName.length <= 1000) byName.set(file.fileName, file)
  }
  return { files: [...byName.values()] }
}

const text = (item: ListedItem, name: string): string | null => {
  const value = item[name]
  if (!value) return null
  return 'S' in value ? value.S : value.N
}

const number = (item: ListedItem, name: string): number | null => {
  const value = text(item, name)
  if (value === null || value.trim() === '') return null
  const n = Number(value)
  return Number.isFinite(n) ? n : null
}

const whole = (item: ListedItem, name: string): number | null => {
  const n = number(item, name)
  return n !== null && Number.isSafeInteger(Math.trunc(n)) ? Math.trunc(n) : null
}

/** An item's values read: texts from `S`, numbers from `N`; a file without a name is no file. */
export function readListedFile(item: ListedItem): ListedFile | undefined {
  const fileName = text(item, 'file_name')
  if (!fileName) return undefined
  const seconds = whole(item, 'created_at')
  // Only seconds are documented; a 13-digit value is read as milliseconds rather than the year 50000.
  const createdAt = seconds === null ? null : new Date(seconds > 100_000_000_000 ? seconds : seconds * 1000)
  return {
    fileName,
    createdAt: createdAt && Number.isFinite(createdAt.getTime()) ? createdAt : null,
    duration: number(item, 'duration'),
    width: whole(item, 'width'),
    height: whole(item, 'height'),
    userName: text(item, 'user_name') || null,
    description: text(item, 'description'),
    url: text(item, 'url') || null,
    location: text(item, 'location'),
    views: whole(item, 'access_cnt'),
    likes: whole(item, 'zan_cnt'),
  }
}
