import { type CallbackValues, parseCallback } from '../../../model/callback.parse.js'
import type { CallbackRecord, SignatureStatus } from '../../../model/callback.record.js'
import { parseTimestamp } from '../../../model/signature.verify.js'

/**
 * One spool line: a callback record as JSON, the body in base64 and times in Unix milliseconds,
 * so the line is exact (no time zone, no lost bytes) and stays one line whatever the body holds.
 * Version 2 holds the typed values and the signed time; a version 1 line (written before values
 * were stored parsed) holds the fields as sent instead, and is parsed once when read.
 */
interface SpoolLine {
  v: 2
  values: CallbackValues
  signedAt: number | null
  dedupeKey: string
  type: number
  serviceCode: string
  taskId: string | null
  userName: string | null
  vsId: string | null
  serviceCreatedAt: number | null
  receivedAt: number
  lastDeliveredAt: number
  method: string
  path: string
  query: string
  body: string
  headers: Record<string, string>
  remoteAddress: string | null
  signature: SignatureStatus
  signatureError: string | null
  /** The W3C traceparent of the span that took the callback, when tracing was on (optional in v2). */
  traceparent?: string
}

const SIGNATURES: ReadonlySet<string> = new Set<SignatureStatus>(['verified', 'failed', 'skipped'])
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/** The spool line of a callback row, without its newline. */
export function encodeSpoolEntry(row: CallbackRecord): string {
  const line: SpoolLine = {
    v: 2,
    values: row.values,
    signedAt: row.signedAt ? row.signedAt.getTime() : null,
    dedupeKey: row.dedupeKey,
    type: row.type,
    serviceCode: row.serviceCode,
    taskId: row.taskId ?? null,
    userName: row.userName ?? null,
    vsId: row.vsId ?? null,
    serviceCreatedAt: row.serviceCreatedAt ? row.serviceCreatedAt.getTime() : null,
    receivedAt: row.receivedAt.getTime(),
    lastDeliveredAt: row.lastDeliveredAt.getTime(),
    method: row.method,
    path: row.path,
    query: row.query ?? '',
    body: row.body.toString('base64'),
    headers: row.headers,
    remoteAddress: row.remoteAddress ?? null,
    signature: row.signature,
    signatureError: row.signatureError ?? null,
  }
  if (row.traceparent) line.traceparent = row.traceparent
  return JSON.stringify(line)
}

/**
 * The callback row of a spool line, or undefined when the line is not one (a write torn by a
 * crash, or damage): such a line is never half-read into a row.
 */
export function decodeSpoolEntry(text: string): CallbackRecord | undefined {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (!isObject(value) || (value.v !== 1 && value.v !== 2)) return undefined
  const line = value as Partial<Record<keyof SpoolLine | 'fields', unknown>>
  const typed = value.v === 2 ? typedOf(line) : typedFromFields(line)
  if (!typed) return undefined
  if (
    !isString(line.dedupeKey) ||
    !Number.isSafeInteger(line.type) ||
    !isString(line.serviceCode) ||
    !isNullableString(line.taskId) ||
    !isNullableString(line.userName) ||
    !isNullableString(line.vsId) ||
    !(line.serviceCreatedAt === null || isTime(line.serviceCreatedAt)) ||
    !isTime(line.receivedAt) ||
    !isTime(line.lastDeliveredAt) ||
    !isString(line.method) ||
    !isString(line.path) ||
    !isString(line.query) ||
    !isString(line.body) ||
    !BASE64.test(line.body) ||
    !isStringRecord(line.headers) ||
    !isNullableString(line.remoteAddress) ||
    !isString(line.signature) ||
    !SIGNATURES.has(line.signature) ||
    !isNullableString(line.signatureError)
  ) {
    return undefined
  }
  return {
    dedupeKey: line.dedupeKey,
    type: line.type as number,
    serviceCode: line.serviceCode,
    taskId: line.taskId,
    userName: line.userName,
    vsId: line.vsId,
    serviceCreatedAt: line.serviceCreatedAt === null ? null : new Date(line.serviceCreatedAt),
    receivedAt: new Date(line.receivedAt),
    lastDeliveredAt: new Date(line.lastDeliveredAt),
    values: typed.values,
    signedAt: typed.signedAt === null ? null : new Date(typed.signedAt),
    method: line.method,
    path: line.path,
    query: line.query,
    body: Buffer.from(line.body, 'base64'),
    headers: line.headers,
    remoteAddress: line.remoteAddress,
    signature: line.signature as SignatureStatus,
    signatureError: line.signatureError,
    ...(isString(line.traceparent) ? { traceparent: line.traceparent } : {}),
  }
}

interface Typed {
  values: CallbackValues
  signedAt: number | null
}

function typedOf(line: Partial<Record<string, unknown>>): Typed | undefined {
  if (!isObject(line.values) || !(line.signedAt === null || isTime(line.signedAt))) return undefined
  return { values: line.values as CallbackValues, signedAt: line.signedAt }
}

// A line an older livegate spooled: its fields are parsed, and its timestamp header read, once.
function typedFromFields(line: Partial<Record<string, unknown>>): Typed | undefined {
  if (!isFields(line.fields) || !isStringRecord(line.headers)) return undefined
  const parsed = parseCallback(line.fields)
  if (!parsed.ok) return undefined
  const header = Object.entries(line.headers).find(([name]) => name.endsWith('-timestamp'))?.[1]
  const reading = header === undefined ? undefined : parseTimestamp(header)
  return { values: parsed.callback.values, signedAt: reading?.ok ? reading.ms : null }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function isString(value: unknown): value is string {
  return typeof value === 'string'
}

function isNullableString(value: unknown): value is string | null {
  return value === null || typeof value === 'string'
}

function isTime(value: unknown): value is number {
  return Number.isSafeInteger(value) && Math.abs(value as number) <= 8.64e15
}

function isStringRecord(value: unknown): value is Record<string, string> {
  return isObject(value) && Object.values(value).every(isString)
}

function isFields(value: unknown): value is Record<string, string | string[]> {
  return (
    isObject(value) &&
    Object.values(value).every((item) => isString(item) || (Array.isArray(item) && item.every(isString)))
  )
}
