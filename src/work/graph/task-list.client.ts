import type { Config, ServiceConfig } from '../../config/config.schema.js'
import { sign } from '../../model/signature.verify.js'
import { TASK_LIST_PATH, type TaskListAnswer, taskListAnswerSchema } from '../../model/task-list.schema.js'
import { UpstreamError, type UpstreamErrorKind } from '../../model/upstream.error.js'

// 2^retries grows past any useful wait quickly (retries may be 10, retryBaseMs 60 s).
const MAX_BACKOFF_MS = 30_000

/** What {@link TaskListClient} is built from. */
export interface TaskListClientOptions {
  services: readonly ServiceConfig[]
  options: Omit<Config['upstream'], 'actionTimeoutMs'>
  fetch?: typeof fetch
  /** The clock for signed timestamps and health; Unix milliseconds. */
  now?: () => number
  /** How a backoff waits; tests make it instant. */
  sleep?: (ms: number) => Promise<void>
  /** Jitter source in [0, 1). */
  random?: () => number
  /** `svc` sends `svc-signature` / `svc-timestamp`; the service's own spelling is `xvs`. */
  headerPrefix?: string
}

/** The last failure of one service code's `task_list`. */
export interface UpstreamFailure {
  at: Date
  kind: UpstreamErrorKind
  message: string
  ret: number | null
}

/** How one service code's `task_list` has been doing, kept in memory. */
export interface UpstreamHealth {
  lastSuccessAt: Date | null
  lastError: UpstreamFailure | null
  /** How long the last attempt took, whatever its outcome. */
  lastLatencyMs: number | null
}

interface Target {
  serviceCode: string
  secret: string
  url: string
  /** The path as sent, prefix included: it is what the service verifies. */
  path: string
  /** The query as signed: the value not percent-encoded. */
  signedQuery: string
  /** The URL without query or credentials, for messages. */
  shownUrl: string
}

/**
 * The signed `GET {baseUrl}/api/20140928/task_list?service_code=…` client. Concurrent calls for
 * one service code share one request (each later call asks again: a poll must never confirm an
 * answer it did not get), and timeouts, network faults and HTTP 5xx are retried with exponential backoff and jitter. An answer with
 * `ret != 0` is the service's verdict and is never retried.
 *
 * An answer may be handed to several callers: treat it as read-only.
 */
export class TaskListClient {
  private readonly services: Map<string, ServiceConfig>
  private readonly options: Omit<Config['upstream'], 'actionTimeoutMs'>
  private readonly fetch: typeof fetch
  private readonly now: () => number
  private readonly sleep: (ms: number) => Promise<void>
  private readonly random: () => number
  private readonly headerPrefix: string
  private readonly inFlight = new Map<string, Promise<TaskListAnswer>>()
  private readonly healthByCode = new Map<string, UpstreamHealth>()
  // Ends every request and retry wait at once when the client is closed (the gateway stops).
  private readonly closing = new AbortController()

  constructor(init: TaskListClientOptions) {
    this.services = new Map(init.services.map((service) => [service.serviceCode, service]))
    this.options = init.options
    this.fetch = init.fetch ?? globalThis.fetch
    this.now = init.now ?? Date.now
    this.sleep = init.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)))
    this.random = init.random ?? Math.random
    this.headerPrefix = init.headerPrefix ?? 'svc'
  }

  /** The current `task_list` of a service code; rejects with an {@link UpstreamError}. */
  async get(serviceCode: string): Promise<TaskListAnswer> {
    const service = this.services.get(serviceCode)
    if (!service) throw new UpstreamError('NOT_CONFIGURED', serviceCode, `Service code "${serviceCode}" is not configured.`)
    const running = this.inFlight.get(serviceCode)
    if (running) return running
    const request = this.request(service).finally(() => this.inFlight.delete(serviceCode))
    this.inFlight.set(serviceCode, request)
    return request
  }

  /**
   * Aborts every request under way and every retry wait: they reject with NETWORK at once, so
   * a stopping gateway never waits out a hanging upstream.
   */
  close(): void {
    this.closing.abort()
  }

  /** What is known of a service code's `task_list` health; all nulls before the first request. */
  health(serviceCode: string): UpstreamHealth {
    const health = this.healthByCode.get(serviceCode)
    if (!health) return { lastSuccessAt: null, lastError: null, lastLatencyMs: null }
    return { ...health, lastError: health.lastError ? { ...health.lastError } : null }
  }

  private async request(service: ServiceConfig): Promise<TaskListAnswer> {
    const health = this.healthOf(service.serviceCode)
    try {
      const target = this.targetOf(service)
      for (let attempt = 0; ; attempt++) {
        try {
          const answer = await this.attempt(target, health)
          health.lastSuccessAt = new Date(this.now())
          return answer
        } catch (error) {
          const failure = asUpstreamError(error, service.serviceCode)
          if (!failure.retryable || attempt >= this.options.retries || this.closing.signal.aborted) throw failure
          await this.closableSleep(this.backoffMs(attempt))
        }
      }
    } catch (error) {
      const failure = asUpstreamError(error, service.serviceCode)
      health.lastError = { at: new Date(this.now()), kind: failure.kind, message: failure.message, ret: failure.ret ?? null }
      throw failure
    }
  }

  private async attempt(target: Target, health: UpstreamHealth): Promise<TaskListAnswer> {
    const timestamp = String(this.now())
    const signature = sign({ path: target.path, query: target.signedQuery, body: '', timestamp }, target.secret)
    const controller = new AbortController()
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      controller.abort()
    }, this.options.timeoutMs)
    const started = performance.now()
    // The timer covers the body as well: a service that sends headers and then stalls is a timeout.
    const failed = (cause: unknown) =>
      timedOut
        ? new UpstreamError('TIMEOUT', target.serviceCode, `GET ${target.shownUrl} for ${target.serviceCode} gave no answer within ${this.options.timeoutMs} ms.`, { cause })
        : new UpstreamError('NETWORK', target.serviceCode, `GET ${target.shownUrl} for ${target.serviceCode} failed: ${networkReason(cause)}.`, { cause })
    try {
      let response: Response
      let text: string
      try {
        response = await this.fetch(target.url, {
          method: 'GET',
          headers: { [`${this.headerPrefix}-signature`]: signature, [`${this.headerPrefix}-timestamp`]: timestamp, accept: 'application/json' },
          signal: AbortSignal.any([controller.signal, this.closing.signal]),
        })
        text = await response.text()
      } catch (error) {
        throw failed(error)
      }
      if (!response.ok) {
        throw new UpstreamError('HTTP', target.serviceCode, `GET ${target.shownUrl} for ${target.serviceCode} answered HTTP ${response.status}.`, { status: response.status })
      }
      return readAnswer(text, target)
    } finally {
      clearTimeout(timer)
      health.lastLatencyMs = Math.round(performance.now() - started)
    }
  }

  private targetOf(service: ServiceConfig): Target {
    const code = service.serviceCode
    if (!service.baseUrl) throw new UpstreamError('NOT_CONFIGURED', code, `Service code "${code}" has no baseUrl for task_list.`)
    const secret = service.secrets[0]
    if (!secret) throw new UpstreamError('NOT_CONFIGURED', code, `Service code "${code}" has no secret to sign task_list with.`)
    const url = new URL(service.baseUrl)
    url.pathname = `${url.pathname.replace(/\/+$/, '')}${TASK_LIST_PATH}`
    url.search = `service_code=${encodeURIComponent(code)}`
    url.hash = ''
    return {
      serviceCode: code,
      secret,
      url: url.toString(),
      path: url.pathname,
      signedQuery: `service_code=${code}`,
      shownUrl: `${url.origin}${url.pathname}`,
    }
  }

  private backoffMs(attempt: number): number {
    const step = Math.min(this.options.retryBaseMs * 2 ** attempt, MAX_BACKOFF_MS)
    // Jitter spreads the retries of several gateways that failed together.
    return Math.round(step + this.random() * step * 0.5)
  }

  private async closableSleep(ms: number): Promise<void> {
    const signal = this.closing.signal
    let onAbort: (() => void) | undefined
    const aborted = new Promise<void>((resolve) => {
      onAbort = () => resolve()
      signal.addEventListener('abort', onAbort, { once: true })
    })
    try {
      await Promise.race([this.sleep(ms), aborted])
    } finally {
      if (onAbort) signal.removeEventListener('abort', onAbort)
    }
  }

  private healthOf(serviceCode: string): UpstreamHealth {
    let health = this.healthByCode.get(serviceCode)
    if (!health) {
      health = { lastSuccessAt: null, lastError: null, lastLatencyMs: null }
      this.healthByCode.set(serviceCode, health)
    }
    return health
  }
}

function readAnswer(text: string, target: Target): TaskListAnswer {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    throw new UpstreamError('INVALID_ANSWER', target.serviceCode, `GET ${target.shownUrl} for ${target.serviceCode} answered something that is not JSON.`)
  }
  // A refusal need not carry well-formed lists, so its ret is read before the whole answer is.
  const ret = retOf(json)
  if (ret !== undefined && ret !== 0) {
    throw new UpstreamError('RET', target.serviceCode, `task_list for ${target.serviceCode} answered ret ${ret}.`, { ret })
  }
  const parsed = taskListAnswerSchema.safeParse(json)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const where = issue && issue.path.length > 0 ? `${issue.path.map(String).join('.')}: ` : ''
    throw new UpstreamError('INVALID_ANSWER', target.serviceCode, `task_list for ${target.serviceCode} is not a task_list answer (${where}${issue?.message ?? 'invalid'}).`)
  }
  return parsed.data
}

function retOf(json: unknown): number | undefined {
  if (typeof json !== 'object' || json === null || !('ret' in json)) return undefined
  const ret = json.ret
  if (typeof ret === 'number' && Number.isInteger(ret)) return ret
  if (typeof ret === 'string' && /^-?\d{1,15}$/.test(ret)) return Number(ret)
  return undefined
}

function asUpstreamError(error: unknown, serviceCode: string): UpstreamError {
  if (error instanceof UpstreamError) return error
  return new UpstreamError('NETWORK', serviceCode, `task_list for ${serviceCode} failed: ${networkReason(error)}.`, { cause: error })
}

// fetch reports every network fault as "fetch failed"; the useful part is the cause's code.
function networkReason(error: unknown): string {
  const cause = error instanceof Error ? (error.cause as { code?: unknown; message?: unknown } | undefined) : undefined
  if (cause && typeof cause.code === 'string') return cause.code
  if (cause && typeof cause.message === 'string') return cause.message
  return error instanceof Error ? error.message : String(error)
}
