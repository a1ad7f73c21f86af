import { fitsIndex, isInt4 } from './stored.limits.js'

/**
 * Readers for the text values of a notification's form fields. Each returns `undefined` for a
 * value of the wrong form, or one the database cannot hold (model/stored.limits.ts), so the parser
 * can name the field instead of guessing, and no statement is ever handed a value it must refuse.
 */

/** A picture size from `size` (`480x800`). */
export interface PictureSize {
  width: number
  height: number
}

/** `format` split into its three parts (`flv/libx264/aac`). */
export interface MediaFormat {
  container: string
  videoCodec?: string
  audioCodec?: string
}

const INTEGER = /^-?\d{1,15}$/
const DECIMAL = /^-?\d{1,15}(\.\d{1,9})?$/
const SIZE = /^(\d{1,6})[xX](\d{1,6})$/
// The largest seconds value before it is really a millisecond count (year 5138).
const LARGEST_SECONDS_TIME = 99_999_999_999

export function readText(value: string): string {
  return value
}

export function readInteger(value: string): number | undefined {
  return INTEGER.test(value) ? Number(value) : undefined
}

/** A whole number of 32 bits: what an `integer` column and GraphQL's `Int` hold. */
export const readInt32 = (value: string) => ((n) => (n !== undefined && isInt4(n) ? n : undefined))(readInteger(value))

/** A text that names something and is looked up by an index: a task, a user, a file. */
export const readIndexedText = (value: string) => (fitsIndex(value) ? value : undefined)

export function readDecimal(value: string): number | undefined {
  return DECIMAL.test(value) ? Number(value) : undefined
}

export function readFlag(value: string): boolean | undefined {
  return value === '1' ? true : value === '0' ? false : undefined
}

export function readSize(value: string): PictureSize | undefined {
  const match = SIZE.exec(value)
  return match ? { width: Number(match[1]), height: Number(match[2]) } : undefined
}

/** `created_at`: whole seconds since 1970, as a time. */
export function readUnixSeconds(value: string): Date | undefined {
  const seconds = readInteger(value)
  if (seconds === undefined || seconds < 0 || seconds > LARGEST_SECONDS_TIME) return undefined
  return new Date(seconds * 1000)
}

export function readFormat(value: string): MediaFormat | undefined {
  if (value === '') return undefined
  const [container = '', videoCodec, audioCodec] = value.split('/')
  const format: MediaFormat = { container }
  if (videoCodec) format.videoCodec = videoCodec
  if (audioCodec) format.audioCodec = audioCodec
  return format
}

/**
 * `opaque` is the business's own text; the service samples it percent-encoded, so it is decoded
 * once when it is validly encoded and kept as sent otherwise.
 */
export function readOpaque(value: string): string {
  if (!/%[0-9A-Fa-f]{2}/.test(value)) return value
  try {
    return decodeURIComponent(value)
  } catch {
    return value
  }
}

/** The typed values of the known fields; each is present only when sent in a readable form. */
export interface CallbackValues {
  url?: string
  svodUrl?: string
  size?: PictureSize
  duration?: number
  format?: MediaFormat
  path?: string
  fileName?: string
  ctype?: number
  cversion?: string
  isResume?: boolean
  tag?: string
  opaque?: string
  liveOnly?: boolean
  privateFlag?: number
  reachEnd?: boolean
  httpOutputBytes?: number
  inputBytes?: number
  outputIdx?: number
  width?: number
  height?: number
  sessionDuration?: number
  disconnectReason?: number
  status?: number
}

/** What every notification carries beside its values, from the fields every kind may send. */
export type CommonValue = 'vsId' | 'taskId' | 'userName' | 'createdAt'

type Reader = (value: string) => unknown

function readStatus(value: string): number | undefined {
  return value === '0' || value === '1' ? Number(value) : undefined
}

/** Every form field the service documents: where its typed value goes, and how it is read. */
export const FORM_FIELDS: Readonly<Record<string, { key: keyof CallbackValues | CommonValue; read: Reader }>> = {
  hashed_id: { key: 'taskId', read: readIndexedText },
  vs_id: { key: 'vsId', read: readText },
  author: { key: 'userName', read: readIndexedText },
  username: { key: 'userName', read: readIndexedText },
  created_at: { key: 'createdAt', read: readUnixSeconds },
  url: { key: 'url', read: readText },
  svod_url: { key: 'svodUrl', read: readText },
  size: { key: 'size', read: readSize },
  duration: { key: 'duration', read: readDecimal },
  format: { key: 'format', read: readFormat },
  path: { key: 'path', read: readText },
  file_name: { key: 'fileName', read: readIndexedText },
  ctype: { key: 'ctype', read: readInt32 },
  cversion: { key: 'cversion', read: readText },
  is_resume: { key: 'isResume', read: readFlag },
  tag: { key: 'tag', read: readText },
  opaque: { key: 'opaque', read: readOpaque },
  live_only: { key: 'liveOnly', read: readFlag },
  private_flag: { key: 'privateFlag', read: readInteger },
  reach_end: { key: 'reachEnd', read: readFlag },
  http_output_bytes: { key: 'httpOutputBytes', read: readInteger },
  input_bytes: { key: 'inputBytes', read: readInteger },
  output_idx: { key: 'outputIdx', read: readInt32 },
  width: { key: 'width', read: readInt32 },
  height: { key: 'height', read: readInt32 },
  session_duration: { key: 'sessionDuration', read: readDecimal },
  disconnect_reason: { key: 'disconnectReason', read: readInt32 },
  status: { key: 'status', read: readStatus },
}
