import type { Config, ServiceConfig } from '../../config/config.schema.js'
import { type TaskListAnswer, taskListAnswerSchema } from '../../model/task-list.schema.js'
import { UpstreamError, type UpstreamErrorKind } from '../upstream.error.js'
import { CloudClient, type CloudReply } from '../cloud.client.js'
import { backoffMs, retrying } from '../wake.scheduler.js'

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
  headerPrefix?: string | undefined
  /** The gateway's one signed client; built from the fields above when absent (tests). */
  cloud?: CloudClient | undefined
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

/**
 * `task_list` for the poller, through the one {@link CloudClient}. Concurrent calls for one
 * service code share one request (each later call asks again: a poll must never confirm an answer
 * it did not get), and timeouts, network faults and HTTP 5xx are retried with exponential backoff
 * and jitter. An answer with `ret != 0` is the service's verdict and is never retried.
 *
 * An answer may be handed to several callers: treat it as read-only.
 */
export class TaskListClient {
  private readonly services: Map<string, ServiceConfig>
  private readonly options: Omit<Config['upstream'], 'actionTimeoutMs'>
  private readonly cloud: CloudClient
  private readonly now: () => number
  private readonly sleep: ((ms: number) => Promise<void>) | undefined
  private readonly random: () => number
  private readonly inFlight = new Map<string, Promise<TaskListAnswer>>()
  private readonly healthByCode = new Map<string, UpstreamHealth>()
  // Ends this client's requests and retry waits at once (the poller stops); the cloud client stays.
  private readonly closing = new AbortController()

  constructor(init: TaskListClientOptions) {
    this.services = new Map(init.services.map((service) => [service.serviceCode, service]))
    this.options = init.options
    this.now = init.now ?? Date.now
    this.cloud =
      init.cloud ??
      new CloudClient({
        services: init.services,
        headerPrefix: init.headerPrefix,
        now: this.now,
        ...(init.fetch ? { fetch: init.fetch } : {}),
      })
    this.sleep = init.sleep
    this.random = init.random ?? Math.random
  }

  /** The current `task_list` of a service code; rejects with an {@link UpstreamError}. */
  async get(serviceCode: string): Promise<TaskListAnswer> {
    const service = this.services.get(serviceCode)
    if (!service)
      throw new UpstreamError('NOT_CONFIGURED', serviceCode, `Service code "${serviceCode}" is not configured.`)
    const running = this.inFlight.get(serviceCode)
    if (running) return running
    const request = this.request(serviceCode).finally(() => this.inFlight.delete(serviceCode))
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

  private async request(serviceCode: string): Promise<TaskListAnswer> {
    const health = this.healthOf(serviceCode)
    const outcome = await retrying(
      () =>
        this.attempt(serviceCode, health).then(
          (answer) => ({ answer }),
          (error: unknown) => ({ failure: asUpstreamError(error, serviceCode) }),
        ),
      (tried, attempt) => {
        if (!('failure' in tried)) return undefined
        const { retries, retryBaseMs } = this.options
        if (!tried.failure.retryable || attempt >= retries || this.closing.signal.aborted) return undefined
        return backoffMs(attempt, retryBaseMs, MAX_BACKOFF_MS, this.random)
      },
      { signal: this.closing.signal, sleep: this.sleep },
    )
    if ('answer' in outcome) {
      health.lastSuccessAt = new Date(this.now())
      return outcome.answer
    }
    const { failure } = outcome
    health.lastError = {
      at: new Date(this.now()),
      kind: failure.kind,
      message: failure.message,
      ret: failure.ret ?? null,
    }
    throw failure
  }

  private async attempt(serviceCode: string, health: UpstreamHealth): Promise<TaskListAnswer> {
    const started = performance.now()
    try {
      const timeoutMs = this.options.timeoutMs
      const reply = await this.cloud.send({
        serviceCode,
        operation: 'task_list',
        timeoutMs,
        signal: this.closing.signal,
      })
      return readAnswer(reply, serviceCode)
    } finally {
      health.lastLatencyMs = Math.round(performance.now() - started)
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

function readAnswer(reply: CloudReply, serviceCode: string): TaskListAnswer {
  // A refusal need not carry well-formed lists, so its ret is read before the whole answer is.
  if (reply.ret !== undefined && reply.ret !== 0) {
    throw new UpstreamError('RET', serviceCode, `task_list for ${serviceCode} answered ret ${reply.ret}.`, {
      ret: reply.ret,
    })
  }
  const parsed = taskListAnswerSchema.safeParse(reply.json)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const where = issue && issue.path.length > 0 ? `${issue.path.map(String).join('.')}: ` : ''
    const problem = `${where}${issue?.message ?? 'invalid'}`
    throw new UpstreamError(
      'INVALID_ANSWER',
      serviceCode,
      `task_list for ${serviceCode} is not a task_list answer (${problem}).`,
    )
  }
  return parsed.data
}

function asUpstreamError(error: unknown, serviceCode: string): UpstreamError {
  if (error instanceof UpstreamError) return error
  const reason = error instanceof Error ? error.message : String(error)
  return new UpstreamError('NETWORK', serviceCode, `task_list for ${serviceCode} failed: ${reason}.`, { cause: error })
}
