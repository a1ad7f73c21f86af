import { type LivegateError, livegateError } from './error.catalogue.js'
import { type CallbackValues, FORM_FIELDS, readInteger } from './callback.fields.js'
import { callbackKind, type CallbackKind, KIND_ENTRIES, KINDS } from './callback.kinds.js'

export { CALLBACK_KINDS, type CallbackKind } from './callback.kinds.js'
export type { CallbackValues } from './callback.fields.js'

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

/** A parsed notification: the common part, the typed values, and what could not be read. */
export interface ParsedCallback extends CallbackBase {
  values: CallbackValues
  /** Optional fields that were sent in a form that could not be read; kept as sent in the fields. */
  unreadable: string[]
}

/** The parser's verdict. */
export type ParseVerdict = { ok: true; callback: ParsedCallback } | { ok: false; error: LivegateError }

/** The fields each published type requires (see {@link KINDS}), by type number. */
export const REQUIRED_FIELDS: Readonly<Record<number, readonly string[]>> = Object.fromEntries(
  KIND_ENTRIES.map(([, entry]) => [entry.type, entry.required]),
)

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
  if (missing.length > 0)
    return { ok: false, error: livegateError('MISSING_FIELDS', `Missing ${missing.join(', ')}.`, missing) }

  const type = readInteger(typeText as string)
  if (type === undefined || type < 0 || type > 2_147_483_647) {
    return { ok: false, error: livegateError('INVALID_FIELDS', 'type must be a whole number.', ['type']) }
  }
  const kind = callbackKind(type)

  const required: readonly string[] = kind === 'UNKNOWN' ? [] : KINDS[kind].required
  const absent = required.filter((name) => !firstValue(fields, name))
  if (absent.length > 0) {
    return {
      ok: false,
      error: livegateError('MISSING_FIELDS', `A type ${type} notification needs ${absent.join(', ')}.`, absent),
    }
  }

  const callback: ParsedCallback = { kind, type, serviceCode: serviceCode as string, values: {}, unreadable: [] }
  const invalid: string[] = []
  for (const name of Object.keys(fields)) {
    const reader = Object.hasOwn(FORM_FIELDS, name) ? FORM_FIELDS[name] : undefined
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
