import type { CallbackValues } from './callback.fields.js'
import { callbackKind } from './callback.kinds.js'
import { type FormFields, type ParsedCallback, parseForm } from './callback.parse.js'

/** How a stored callback's signature was judged. */
export type SignatureStatus = 'verified' | 'failed' | 'skipped'

/**
 * A callback as it is kept: the typed values the verdict parsed (stored once, never parsed again
 * on the way to the fold or to a reader), the columns the graph reads by, and the request as
 * received (path, query, body, kept headers) as the evidence of what was sent.
 */
export interface CallbackRecord {
  /** Identifies a delivery of the same callback again: service code, type, timestamp header, fields. */
  dedupeKey: string
  type: number
  serviceCode: string
  taskId: string | null
  userName: string | null
  vsId: string | null
  /** `created_at` as the service gave it (the live start). */
  serviceCreatedAt: Date | null
  /** The signed timestamp header: the service's own clock, what "latest" is judged by. */
  signedAt: Date | null
  receivedAt: Date
  lastDeliveredAt: Date
  /** The known fields, typed, as the verdict read them. */
  values: CallbackValues
  method: string
  path: string
  query: string
  body: Buffer
  headers: Record<string, string>
  remoteAddress: string | null
  signature: SignatureStatus
  /** The refusal code the signature would have had, when `verify` is `log` and it failed. */
  signatureError: string | null
  /**
   * The W3C `traceparent` of the span that committed it, when tracing is on: whoever delivers its
   * events later links their span to it. Set by the route, not by the verdict.
   */
  traceparent?: string | null
}

/** A refused delivery as it is recorded for operators; the body is capped. */
export interface RefusalRecord {
  receivedAt: Date
  reason: string
  message: string
  method: string
  path: string
  query: string
  body: Buffer
  bodySize: number
  headers: Record<string, string>
  remoteAddress: string | null
  serviceCode: string | null
  type: string | null
}

/** What the stored columns of a callback say, in the parser's terms: no parsing involved. */
export function storedCallback(
  record: Pick<CallbackRecord, 'type' | 'serviceCode' | 'taskId' | 'userName' | 'vsId' | 'serviceCreatedAt' | 'values'>,
): ParsedCallback {
  const callback: ParsedCallback = {
    kind: callbackKind(record.type),
    type: record.type,
    serviceCode: record.serviceCode,
    values: record.values ?? {},
    unreadable: [],
  }
  if (record.taskId !== null) callback.taskId = record.taskId
  if (record.userName !== null) callback.userName = record.userName
  if (record.vsId !== null) callback.vsId = record.vsId
  if (record.serviceCreatedAt !== null) callback.createdAt = record.serviceCreatedAt
  return callback
}

/**
 * The form fields of a kept callback exactly as sent: the body of a form POST, else the query.
 * Read only when a client asks for them; the typed values never come from here.
 */
export function sentFields(record: Pick<CallbackRecord, 'method' | 'query' | 'body'>): FormFields {
  return parseForm(record.method === 'POST' ? record.body.toString('utf8') : record.query)
}
