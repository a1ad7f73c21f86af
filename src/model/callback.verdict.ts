import { createHash } from 'node:crypto'
import type { Config } from '../config/config.schema.js'
import { type FormFields, firstValue, type ParsedCallback, parseCallback, parseForm } from './callback.parse.js'
import type { CallbackRecord, RefusalRecord, SignatureStatus } from './callback.record.js'
import { type LivegateError, livegateError } from './error.catalogue.js'
import { parseTimestamp, verifySignature } from './signature.verify.js'

export { parseForm }

/** A delivery as the HTTP edge saw it, before any judgement. */
export interface InboundRequest {
  method: string
  /** The path as received, without the query. */
  path: string
  /** The query string as received, without `?`. */
  rawQuery: string
  /** The media type of the body, lowercased, without parameters; undefined when not sent. */
  mediaType: string | undefined
  body: Buffer
  /** Lowercased header names. */
  headers: Readonly<Record<string, string | string[] | undefined>>
  remoteAddress: string | undefined
  receivedAt: Date
}

/** What the verdict needs of one configured service code. */
export interface ServicePolicy {
  serviceCode: string
  /** Newest first; any of them may have signed. */
  secrets: readonly string[]
  verify: 'enforce' | 'log' | 'off'
}

/** What the ingest verdict needs from the configuration, prepared once at start. */
export interface IngestPolicy {
  services: ReadonlyMap<string, ServicePolicy>
  toleranceMs: number
  /** Header prefixes tried in order: `svc` gives `svc-signature` and `svc-timestamp`. */
  headerPrefixes: readonly string[]
  refusedBodyLimit: number
}

/** The ingest policy, prepared once from the configuration. */
export function ingestPolicy(config: Config): IngestPolicy {
  return {
    services: new Map(config.services.map((service) => [service.serviceCode, service])),
    toleranceMs: config.ingest.timestampToleranceSeconds * 1000,
    headerPrefixes: config.ingest.signatureHeaderPrefixes.map((prefix) => prefix.toLowerCase()),
    refusedBodyLimit: config.ingest.refusedBodyLimit,
  }
}

/** The verdict: a row to keep, or a refusal to answer and record. */
export type IngestVerdict =
  | { ok: true; row: CallbackRecord; callback: ParsedCallback; fields: FormFields }
  | { ok: false; error: LivegateError; refusal: RefusalRecord }

const FORM_MEDIA_TYPE = 'application/x-www-form-urlencoded'
// Request headers worth keeping beside a callback: who sent it and through what.
const KEPT_HEADERS = [
  'user-agent',
  'host',
  'content-type',
  'content-length',
  'x-forwarded-for',
  'x-real-ip',
  'forwarded',
]

/**
 * Judges one delivery: method and media type, fields, service code, signature (per the
 * service's `verify` mode), then the type's required fields. Pure: the clock comes in the
 * request's `receivedAt`.
 */
export function judgeCallback(request: InboundRequest, policy: IngestPolicy): IngestVerdict {
  const refuse = (error: LivegateError, fields?: FormFields): IngestVerdict => ({
    ok: false,
    error,
    refusal: refusalRow(request, policy, error, fields),
  })

  if (request.method !== 'POST' && request.method !== 'GET') return refuse(livegateError('METHOD_NOT_ALLOWED'))
  if (request.method === 'POST' && request.mediaType !== FORM_MEDIA_TYPE) {
    return refuse(livegateError('UNSUPPORTED_MEDIA_TYPE'))
  }
  const source = request.method === 'POST' ? request.body.toString('utf8') : request.rawQuery
  const fields = parseForm(source)
  // PostgreSQL text and jsonb cannot hold NUL; no genuine notification contains one. A decoded
  // field holds one only if the text did, raw or as %00, so the fields are searched only then.
  const mayHoldNul = source.includes('\u0000') || source.includes('%00')
  if (
    mayHoldNul &&
    (source.includes('\u0000') ||
      Object.keys(fields).some((name) => hasNul(name) || hasNul(fields[name] as string | string[])))
  ) {
    return refuse(livegateError('MALFORMED_REQUEST', 'A field holds a NUL character.'), fields)
  }

  const serviceCode = firstValue(fields, 'service_code')
  if (!serviceCode) return refuse(livegateError('MISSING_FIELDS', 'Missing service_code.', ['service_code']), fields)
  const service = policy.services.get(serviceCode)
  if (!service)
    return refuse(livegateError('UNKNOWN_SERVICE', `The service code "${serviceCode}" is not configured.`), fields)

  const timestampHeader = headerValue(request.headers, policy.headerPrefixes, 'timestamp')
  let signature: SignatureStatus = 'skipped'
  let signatureError: string | null = null
  if (service.verify !== 'off') {
    const verdict = verifySignature({
      path: request.path,
      rawQuery: request.rawQuery,
      body: request.body,
      signatureHeader: headerValue(request.headers, policy.headerPrefixes, 'signature'),
      timestampHeader,
      secrets: service.secrets,
      nowMs: request.receivedAt.getTime(),
      toleranceMs: policy.toleranceMs,
    })
    if (!verdict.ok && service.verify === 'enforce') return refuse(verdict.error, fields)
    signature = verdict.ok ? 'verified' : 'failed'
    signatureError = verdict.ok ? null : verdict.error.code
  }

  const parsed = parseCallback(fields)
  if (!parsed.ok) return refuse(parsed.error, fields)
  const callback = parsed.callback
  const signed = timestampHeader === undefined ? undefined : parseTimestamp(timestampHeader)
  return {
    ok: true,
    callback,
    fields,
    row: {
      dedupeKey: dedupeKey(fields, timestampHeader),
      type: callback.type,
      serviceCode: callback.serviceCode,
      taskId: callback.taskId ?? null,
      userName: callback.userName ?? null,
      vsId: callback.vsId ?? null,
      serviceCreatedAt: callback.createdAt ?? null,
      signedAt: signed?.ok ? new Date(signed.ms) : null,
      receivedAt: request.receivedAt,
      lastDeliveredAt: request.receivedAt,
      values: callback.values,
      method: request.method,
      path: request.path,
      query: request.rawQuery,
      body: request.body,
      headers: keptHeaders(request.headers, policy.headerPrefixes),
      remoteAddress: request.remoteAddress ?? null,
      signature,
      signatureError,
    },
  }
}

/**
 * The same callback delivered again has the same service code, type, fields and signed
 * timestamp. The timestamp is part of it so that two genuine events with equal fields (two
 * disconnects of one task) are two rows; a retry of the same signed request is one.
 */
export function dedupeKey(fields: FormFields, timestampHeader: string | undefined): string {
  const names = Object.keys(fields).sort()
  const canonical = JSON.stringify([timestampHeader ?? '', names.map((name) => [name, fields[name]])])
  return createHash('sha256').update(canonical).digest('hex')
}

function headerValue(
  headers: InboundRequest['headers'],
  prefixes: readonly string[],
  suffix: 'signature' | 'timestamp',
): string | undefined {
  for (const prefix of prefixes) {
    const value = headers[`${prefix}-${suffix}`]
    if (value !== undefined) return Array.isArray(value) ? value[0] : value
  }
  return undefined
}

// The kept header names of a policy's prefixes, worked out once per prefix list, not per request.
const keptNamesByPrefixes = new WeakMap<readonly string[], string[]>()

function keptHeaders(headers: InboundRequest['headers'], prefixes: readonly string[]): Record<string, string> {
  const kept: Record<string, string> = {}
  let names = keptNamesByPrefixes.get(prefixes)
  if (!names) {
    names = [...KEPT_HEADERS, ...prefixes.flatMap((prefix) => [`${prefix}-signature`, `${prefix}-timestamp`])]
    keptNamesByPrefixes.set(prefixes, names)
  }
  for (const name of names) {
    const value = headers[name]
    if (value !== undefined) kept[name] = Array.isArray(value) ? value.join(', ') : value
  }
  return kept
}

/** The refused-table row for a delivery refused with `error`; the body is capped by policy. */
export function refusalRow(
  request: InboundRequest,
  policy: IngestPolicy,
  error: LivegateError,
  fields?: FormFields,
): RefusalRecord {
  const type = fields ? firstValue(fields, 'type') : undefined
  const serviceCode = fields ? firstValue(fields, 'service_code') : undefined
  return {
    receivedAt: request.receivedAt,
    reason: error.code,
    message: error.message,
    method: request.method,
    path: withoutNul(request.path),
    query: withoutNul(request.rawQuery),
    body: request.body.subarray(0, policy.refusedBodyLimit),
    bodySize: request.body.length,
    headers: keptHeaders(request.headers, policy.headerPrefixes),
    remoteAddress: request.remoteAddress ?? null,
    serviceCode: serviceCode === undefined ? null : withoutNul(serviceCode).slice(0, 256),
    type: type === undefined ? null : withoutNul(type).slice(0, 64),
  }
}

function hasNul(value: string | string[]): boolean {
  return Array.isArray(value) ? value.some((item) => item.includes('\u0000')) : value.includes('\u0000')
}

function withoutNul(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text
}
