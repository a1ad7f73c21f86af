import type { ServiceConfig } from '../../config/config.schema.js'
import { type CloudActionArgs, CLOUD_OPERATION, cloudParamsOf } from '../../model/action.model.js'
import { UpstreamError } from '../upstream.error.js'
import { CloudClient, neverSent } from '../cloud.client.js'
import { retrying } from '../wake.scheduler.js'

/** What the cloud said to an action, or why it said nothing usable. */
export type CloudAnswer =
  | { kind: 'answered'; ret: number; message: string | null }
  | { kind: 'unreachable' | 'timeout' | 'http' | 'invalid' | 'not-configured'; message: string }

/** What {@link ActionClient} is built from. */
export interface ActionClientOptions {
  services: readonly ServiceConfig[]
  /** The whole call, retries included, ends by then. */
  timeoutMs: number
  /** `svc` or `xvs`, as for task_list. */
  headerPrefix?: string | undefined
  fetch?: typeof fetch
  now?: () => number
  sleep?: (ms: number) => Promise<void>
  /** The gateway's one signed client; built from the fields above when absent (tests). */
  cloud?: CloudClient | undefined
}

// A stop the cloud could not be reached for is tried again after these waits, while time is left.
const STOP_RETRY_WAITS_MS = [200, 500, 1000]

/**
 * An action's cloud operation (`cancel_task`, `send_txt_msg`) through the one {@link CloudClient}.
 * A stop is tried again only when the cloud could not be reached at all (no connection: nothing
 * was sent), a message never: a request that may have arrived is never repeated. Every call ends within `timeoutMs`,
 * retries included.
 */
export class ActionClient {
  private readonly cloud: CloudClient
  private readonly now: () => number
  private readonly sleep: ((ms: number) => Promise<void>) | undefined
  private readonly closing = new AbortController()

  constructor(private readonly options: ActionClientOptions) {
    this.now = options.now ?? Date.now
    this.sleep = options.sleep
    const { services, headerPrefix, fetch } = options
    this.cloud =
      options.cloud ?? new CloudClient({ services, headerPrefix, now: this.now, ...(fetch ? { fetch } : {}) })
  }

  /** Whether a service code can be acted on: it has a `baseUrl` and a secret. */
  canReach(serviceCode: string): boolean {
    return this.cloud.canReach(serviceCode)
  }

  /** Calls the cloud; resolves with its answer and how many requests were sent (never rejects). */
  async call(args: CloudActionArgs): Promise<{ answer: CloudAnswer; attempts: number }> {
    if (!this.canReach(args.serviceCode)) {
      return {
        answer: {
          kind: 'not-configured',
          message: `Service code "${args.serviceCode}" has no baseUrl and secret to act with.`,
        },
        attempts: 0,
      }
    }
    const deadline = this.now() + this.options.timeoutMs
    const waits = args.kind === 'STOP_TASK' ? STOP_RETRY_WAITS_MS : []
    let attempts = 0
    const answer = await retrying(
      () => {
        attempts++
        return this.attempt(args, deadline)
      },
      (tried, attempt) => {
        const wait = waits[attempt]
        if (tried.kind !== 'unreachable' || wait === undefined || this.now() + wait >= deadline) return undefined
        return this.closing.signal.aborted ? undefined : wait
      },
      { signal: this.closing.signal, sleep: this.sleep },
    )
    return { answer, attempts }
  }

  /** Ends every call under way at once (the gateway stops). */
  close(): void {
    this.closing.abort()
  }

  private async attempt(args: CloudActionArgs, deadline: number): Promise<CloudAnswer> {
    const operation = CLOUD_OPERATION[args.kind]
    const params = cloudParamsOf(args)
    const timeoutMs = Math.max(1, deadline - this.now())
    try {
      const reply = await this.cloud.send({
        serviceCode: args.serviceCode,
        operation,
        params,
        timeoutMs,
        statedTimeoutMs: this.options.timeoutMs,
        signal: this.closing.signal,
      })
      if (reply.ret === undefined)
        return { kind: 'invalid', message: `${operation} for ${args.serviceCode} answered without a ret.` }
      return { kind: 'answered', ret: reply.ret, message: reply.msg }
    } catch (error) {
      if (!(error instanceof UpstreamError)) throw error
      const kinds = {
        NOT_CONFIGURED: 'not-configured',
        HTTP: 'http',
        INVALID_ANSWER: 'invalid',
        RET: 'invalid',
        TIMEOUT: 'timeout',
      } as const
      if (error.kind !== 'NETWORK') return { kind: kinds[error.kind], message: error.message }
      // Refused or unresolvable: no request left this process, so a stop may be tried again.
      if (neverSent(error))
        return { kind: 'unreachable', message: error.message.replace(/failed: (\w+)\.$/, 'could not be reached ($1).') }
      return { kind: 'timeout', message: error.message }
    }
  }
}
