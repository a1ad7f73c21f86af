import { type LivegateError, livegateError } from './error.catalogue.js'
import {
  type MediaFormat,
  type PictureSize,
  readDecimal,
  readFlag,
  readFormat,
  readInteger,
  readOpaque,
  readSize,
  readText,
  readUnixSeconds,
} from './callback.fields.js'

/** A notification's form fields as sent; a name sent twice keeps every value in order. */
export type FormFields = Record<string, string | string[]>

/** Form fields in order; a name sent twice keeps both values. No prototype, so any name is safe. */
export function parseForm(text: string): FormFields {
  const fields: FormFields = Object.create(null)
  for (const [name, value] of new URLSearchParams(text)) {
    const previous = fields[name]
    if (previous === undefined) fields[name] = value
    else if (Array.isArray(previous)) previous.push(value)
    else fields[name] = [previous, value]
  }
  return fields
}

/** The notification types the service publishes; any other value is kept as unknown. */
export const CALLBACK_KINDS = {
  0: 'LIVE_START',
  1: 'LIVE_END',
  2: 'ARCHIVED',
  8: 'CLIENT_DISCONNECT',
  9: 'THUMBNAIL',
  15: 'LIVE_RESUME',
} as const

/** The name of a known notification type, or `UNKNOWN`. */
export type CallbackKind = (typeof CALLBACK_KINDS)[keyof typeof CALLBACK_KINDS] | 'UNKNOWN'

/** What every notification carries once parsed. */
export interface CallbackBase {
  kind: CallbackKind
  type: number
  serviceCode: string
  vsId?: string
  /** `hashed_id`: the task the notification is about. */
  taskId?: string
  /** `author` or `username`. */
  userName?: string
  /** `created_at`: when the live started, by the service's clock. */
  createdAt?: Date
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

/** A parsed notification: the common part, the typed values, and what could not be read. */
export interface ParsedCallback extends CallbackBase {
  values: CallbackValues
  /** Optional fields that were sent in a form that could not be read; kept as sent in the fields. */
  unreadable: string[]
}

/** The parser's verdict. */
export type ParseVerdict = { ok: true; callback: ParsedCallback } | { ok: false; error: LivegateError }

type Reader = (value: string) => unknown

// One row per form field the service documents: its typed name and how to read it.
const FIELD_READERS: Record<string, { key: keyof CallbackValues | keyof CallbackBase; read: Reader }> = {
  hashed_id: { key: 'taskId', read: readText },
  vs_id: { key: 'vsId', read: readText },
  author: { key: 'userName', read: readText },
  username: { key: 'userName', read: readText },
  created_at: { key: 'createdAt', read: readUnixSeconds },
  url: { key: 'url', read: readText },
  svod_url: { key: 'svodUrl', read: readText },
  size: { key: 'size', read: readSize },
  duration: { key: 'duration', read: readDecimal },
  format: { key: 'format', read: readFormat },
  path: { key: 'path', read: readText },
  file_name: { key: 'fileName', read: readText },
  ctype: { key: 'ctype', read: readInteger },
  cversion: { key: 'cversion', read: readText },
  is_resume: { key: 'isResume', read: readFlag },
  tag: { key: 'tag', read: readText },
  opaque: { key: 'opaque', read: readOpaque },
  live_only: { key: 'liveOnly', read: readFlag },
  private_flag: { key: 'privateFlag', read: readInteger },
  reach_end: { key: 'reachEnd', read: readFlag },
  http_output_bytes: { key: 'httpOutputBytes', read: readInteger },
  input_bytes: { key: 'inputBytes', read: readInteger },
  output_idx: { key: 'outputIdx', read: readInteger },
  width: { key: 'width', read: readInteger },
  height: { key: 'height', read: readInteger },
  session_duration: { key: 'sessionDuration', read: readDecimal },
  disconnect_reason: { key: 'disconnectReason', read: readInteger },
  status: { key: 'status', read: readStatus },
}

function readStatus(value: string): number | undefined {
  return value === '0' || value === '1' ? Number(value) : undefined
}

/**
 * The fields without which a known type means nothing to the graph. The published field lists are
 * longer; the rest are optional here, because refusing a notification for a missing opaque or tag
 * would lose it, and the service's retry behaviour is unknown.
 */
export const REQUIRED_FIELDS: Record<keyof typeof CALLBACK_KINDS, readonly string[]> = {
  0: ['hashed_id'],
  1: ['hashed_id', 'reach_end'],
  2: ['hashed_id'],
  8: ['username'],
  9: ['hashed_id'],
  15: ['hashed_id', 'status'],
}

/** The first value of a field, or undefined when it was not sent. */
export function firstValue(fields: FormFields, name: string): string | undefined {
  const value = Object.hasOwn(fields, name) ? fields[name] : undefined
  return Array.isArray(value) ? value[0] : value
}

/**
 * Parses a notification's fields into a typed record. `type` and `service_code` are required of
 * every notification; a known type also requires {@link REQUIRED_FIELDS}. Unknown types and
 * unknown fields are kept, never refused.
 */
export function parseCallback(fields: FormFields): ParseVerdict {
  const typeText = firstValue(fields, 'type')
  const serviceCode = firstValue(fields, 'service_code')
  const missing = [typeText ? undefined : 'type', serviceCode ? undefined : 'service_code'].filter(isDefined)
  if (missing.length > 0) return { ok: false, error: livegateError('MISSING_FIELDS', `Missing ${missing.join(', ')}.`, missing) }

  const type = readInteger(typeText as string)
  if (type === undefined || type < 0 || type > 2_147_483_647) {
    return { ok: false, error: livegateError('INVALID_FIELDS', 'type must be a whole number.', ['type']) }
  }
  const kind: CallbackKind = Object.hasOwn(CALLBACK_KINDS, type) ? CALLBACK_KINDS[type as keyof typeof CALLBACK_KINDS] : 'UNKNOWN'

  const required = kind === 'UNKNOWN' ? [] : REQUIRED_FIELDS[type as keyof typeof CALLBACK_KINDS]
  const absent = required.filter((name) => !firstValue(fields, name))
  if (absent.length > 0) {
    return { ok: false, error: livegateError('MISSING_FIELDS', `A type ${type} notification needs ${absent.join(', ')}.`, absent) }
  }

  const callback: ParsedCallback = { kind, type, serviceCode: serviceCode as string, values: {}, unreadable: [] }
  const invalid: string[] = []
  for (const name of Object.keys(fields)) {
    const reader = Object.hasOwn(FIELD_READERS, name) ? FIELD_READERS[name] : undefined
    const text = firstValue(fields, name)
    if (!reader || text === undefined || text === '') continue
    const value = reader.read(text)
    if (value === undefined) {
      if (required.includes(name)) invalid.push(name)
      else callback.unreadable.push(name)
      continue
    }
    if (isBaseKey(reader.key)) {
      // `author` and `username` name the same person; the first one sent wins.
      if ((callback as unknown as Record<string, unknown>)[reader.key] === undefined) {
        ;(callback as unknown as Record<string, unknown>)[reader.key] = value
      }
    } else {
      ;(callback.values as Record<string, unknown>)[reader.key] = value
    }
  }
  if (invalid.length > 0) {
    return { ok: false, error: livegateError('INVALID_FIELDS', `Unreadable ${invalid.join(', ')}.`, invalid) }
  }
  return { ok: true, callback }
}

const BASE_KEYS = new Set(['vsId', 'taskId', 'userName', 'createdAt'])

function isBaseKey(key: string): key is 'vsId' | 'taskId' | 'userName' | 'createdAt' {
  return BASE_KEYS.has(key)
}

function isDefined<T>(value: T | undefined): value is T {
  return value !== undefined
}
