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

/** An item's values read: texts from `S`, numbers from `N`; a file without a name is no file. */
export function readListedFile(item: Record<string, { S: string } | { N: string }>): ListedFile | undefined {
  const text = (name: string): string | null => {
    const value = item[name]
    if (!value) return null
    return 'S' in value ? value.S : value.N
  }
  const number = (name: string): number | null => {
    const value = text(name)
    if (value === null || value.trim() === '') return null
    const n = Number(value)
    return Number.isFinite(n) ? n : null
  }
  const whole = (name: string): number | null => {
    const n = number(name)
    return n !== null && Number.isSafeInteger(Math.trunc(n)) ? Math.trunc(n) : null
  }
  const fileName = text('file_name')
  if (!fileName) return undefined
  const seconds = whole('created_at')
  // Only seconds are documented; a 13-digit value is read as milliseconds rather than the year 50000.
  const createdAt = seconds === null ? null : new Date(seconds > 100_000_000_000 ? seconds : seconds * 1000)
  return {
    fileName,
    createdAt: createdAt && Number.isFinite(createdAt.getTime()) ? createdAt : null,
    duration: number('duration'),
    width: whole('width'),
    height: whole('height'),
    userName: text('user_name') || null,
    description: text('description'),
    url: text('url') || null,
    location: text('location'),
    views: whole('access_cnt'),
    likes: whole('zan_cnt'),
  }
}
