import { SpanStatusCode } from '@opentelemetry/api'
import type { ServiceConfig } from '../config/config.schema.js'
import { sign } from '../model/signature.verify.js'
import { API_VERSION_PATH } from '../model/task-list.schema.js'
import { UpstreamError } from './upstream.error.js'
import type { Metrics } from './metrics.registry.js'
import { inSpan } from './tracing.spans.js'

/** The cloud's operations livegate calls (service-api.md, operations.md). */
export type CloudOperation = 'task_list' | 'cancel_task' | 'send_txt_msg' | 'management'

/** One call to the cloud. */
export interface CloudRequest {
  serviceCode: string
  operation: CloudOperation
  /** Query parameters after `service_code`, in the order they are signed; values as written. */
  params?: ReadonlyArray<readonly [string, string]>
  /** A JSON body makes the call a POST (`management`); signed as sent, byte for byte. */
  body?: unknown
  /** The call ends by then, body included. */
  timeoutMs: number
  /** The whole call's limit, as its error names it, when this attempt has only what is left of it. */
  statedTimeoutMs?: number | undefined
  /** The caller's own abort (its part of the gateway stops); rejects with NETWORK. */
  signal?: AbortSignal | undefined
}

/** What a 2xx JSON answer said: its `ret` (undefined when it has none) and `msg`. */
export interface CloudReply {
  json: unknown
  ret: number | undefined
  msg: string | null
}

/** What {@link CloudClient} is built from. */
export interface CloudClientOptions {
  services: readonly ServiceConfig[]
  /** `svc` sends `svc-signature` / `svc-timestamp`; the service's own spelling is `xvs`. */
  headerPrefix?: string | undefined
  fetch?: typeof fetch
  /** The clock of signed timestamps; Unix milliseconds. */
  now?: () => number
  metrics?: Pick<Metrics, 'cloudRequestSeconds'> | undefined
}

// Codes of a connection that never opened: nothing reached the cloud.
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH'])

/**
 * The one signed client of the cloud: the secret per service code, the URL under its `baseUrl`,
 * the signature over path + query (values not percent-encoded) + raw body + timestamp
 * (signature.md), the timeout and the abort of a stopping gateway, the failure kinds, a span and
 * a metric per operation. It sends once: retrying is its callers' choice, because only they know
 * whether a request that may have arrived can be repeated.
 */
export class CloudClient {
  private readonly services: Map<string, ServiceConfig>
  private readonly fetch: typeof fetch
  private readonly now: () => number
  private readonly headerPrefix: string
  // Ends every request under way at once when the gateway stops.
  private readonly closing = new AbortController()

  constructor(private readonly options: CloudClientOptions) {
    this.services = new Map(options.services.map((service) => [service.serviceCode, service]))
    this.fetch = options.fetch ?? globalThis.fetch
    this.now = options.now ?? Date.now
    this.headerPrefix = options.headerPrefix ?? 'svc'
  }

  /** Whether a service code can be called: it has a `baseUrl` and a secret. */
  canReach(serviceCode: string): boolean {
    const service = this.services.get(serviceCode)
    return Boolean(service?.baseUrl && service.secrets[0])
  }

  /** The service codes that can be called. */
  reachableCodes(): string[] {
    return [...this.services.keys()].filter((code) => this.canReach(code))
  }

  /** Whether {@link close} was called. */
  get closed(): boolean {
    return this.closing.signal.aborted
  }

  /** Aborts every request under way: each rejects with NETWORK at once. */
  close(): void {
    this.closing.abort()
  }

  /** Sends one signed request; resolves with a 2xx JSON answer, rejects with an {@link UpstreamError}. */
  send(request: CloudRequest): Promise<CloudReply> {
    const operation = metricName(request)
    const attributes = { 'livegate.service_code': request.serviceCode, 'livegate.cloud.operation': operation }
    return inSpan(`cloud ${operation}`, { attributes }, async (span) => {
      const started = performance.now()
      let outcome = 'ok'
      try {
        return await this.attempt(request)
      } catch (error) {
        outcome = error instanceof UpstreamError ? error.kind : 'NETWORK'
        span?.setStatus({ code: SpanStatusCode.ERROR, message: outcome })
        throw error
      } finally {
        const seconds = (performance.now() - started) / 1000
        this.options.metrics?.cloudRequestSeconds.observe({ operation, outcome }, seconds)
      }
    })
  }

  private async attempt(request: CloudRequest): Promise<CloudReply> {
    const code = request.serviceCode
    const service = this.services.get(code)
    if (!service) throw new UpstreamError('NOT_CONFIGURED', code, `Service code "${code}" is not configured.`)
    const what = request.operation
    if (!service.baseUrl)
      throw new UpstreamError('NOT_CONFIGURED', code, `Service code "${code}" has no baseUrl for ${what}.`)
    const secret = service.secrets[0]
    if (!secret)
      throw new UpstreamError('NOT_CONFIGURED', code, `Service code "${code}" has no secret to sign ${what} with.`)
    const pairs: Array<readonly [string, string]> = [['service_code', code], ...(request.params ?? [])]
    const url = new URL(service.baseUrl)
    url.pathname = `${url.pathname.replace(/\/+$/, '')}${API_VERSION_PATH}/${request.operation}`
    url.search = pairs.map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&')
    url.hash = ''
    const body = request.body === undefined ? undefined : JSON.stringify(request.body)
    const method = body === undefined ? 'GET' : 'POST'
    const timestamp = String(this.now())
    const signedQuery = pairs.map(([name, value]) => `${name}=${value}`).join('&')
    const signature = sign({ path: url.pathname, query: signedQuery, body: body ?? '', timestamp }, secret)
    const shown = `${method} ${url.origin}${url.pathname}`
    const timeout = AbortSignal.timeout(Math.max(1, request.timeoutMs))
    const aborts = [timeout, this.closing.signal, ...(request.signal ? [request.signal] : [])]
    let response: Response
    let text: string
    try {
      response = await this.fetch(url, {
        method,
        headers: {
          [`${this.headerPrefix}-signature`]: signature,
          [`${this.headerPrefix}-timestamp`]: timestamp,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body }),
        signal: AbortSignal.any(aborts),
      })
      // The timeout covers the body too: a cloud that sends headers and then stalls has timed out.
      text = await response.text()
    } catch (cause) {
      if (timeout.aborted && !this.closing.signal.aborted && !request.signal?.aborted) {
        const message = `${shown} for ${code} gave no answer within ${request.statedTimeoutMs ?? request.timeoutMs} ms.`
        throw new UpstreamError('TIMEOUT', code, message, { cause })
      }
      throw new UpstreamError('NETWORK', code, `${shown} for ${code} failed: ${networkReason(cause)}.`, { cause })
    }
    if (!response.ok) {
      const message = `${shown} for ${code} answered HTTP ${response.status}.`
      throw new UpstreamError('HTTP', code, message, { status: response.status })
    }
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      throw new UpstreamError('INVALID_ANSWER', code, `${shown} for ${code} answered something that is not JSON.`)
    }
    const { msg } = (typeof json === 'object' && json !== null ? json : {}) as { msg?: unknown }
    return { json, ret: retOf(json), msg: typeof msg === 'string' ? msg.slice(0, 1000) : null }
  }
}

/** Whether a failure left nothing at the cloud: the connection never opened, so asking again is safe. */
export function neverSent(error: UpstreamError): boolean {
  if (error.kind === 'NOT_CONFIGURED') return true
  return error.kind === 'NETWORK' && NOT_SENT_CODES.has(causeCode(error.cause) ?? '')
}

/** A reply's `ret` as the cloud sends it: a number, or digits as text. */
export function retOf(json: unknown): number | undefined {
  if (typeof json !== 'object' || json === null || !('ret' in json)) return undefined
  const ret = json.ret
  if (typeof ret === 'number' && Number.isInteger(ret)) return ret
  if (typeof ret === 'string' && /^-?\d{1,15}$/.test(ret)) return Number(ret)
  return undefined
}

// One label per cloud operation; a management call is labelled by its function as well.
function metricName(request: CloudRequest): string {
  const fn = (request.body as { function?: unknown } | undefined)?.function
  return request.operation === 'management' && typeof fn === 'string' ? `management.${fn}` : request.operation
}

function causeCode(error: unknown): string | undefined {
  const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined
  return cause && typeof cause.code === 'string' ? cause.code : undefined
}

// fetch reports every network fault as "fetch failed"; the useful part is the cause's code.
function networkReason(error: unknown): string {
  const code = causeCode(error)
  if (code) return code
  const cause = error instanceof Error ? (error.cause as { message?: unknown } | undefined) : undefined
  if (cause && typeof cause.message === 'string') return cause.message
  return error instanceof Error ? error.message : String(error)
}
