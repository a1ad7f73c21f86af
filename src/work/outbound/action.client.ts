import type { ServiceConfig } from '../../config/config.schema.js'
import { type ActionArgs, cloudCallOf } from '../../model/action.model.js'
import { sign } from '../../model/signature.verify.js'

/** What the cloud said to an action, or why it said nothing usable. */
export type CloudAnswer = { kind: 'answered'; ret: number; message: string | null } | { kind: 'unreachable' | 'timeout' | 'http' | 'invalid' | 'not-configured'; message: string }

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
}

// A stop the cloud could not be reached for is tried again after these waits, while time is left.
const STOP_RETRY_WAITS_MS = [200, 500, 1000]

/**
 * The signed GET of an action's cloud operation (`cancel_task`, `send_txt_msg`), signed as the
 * task_list client signs (signature.md). A stop is tried again only when the cloud could not be
 * reached at all (no connection: nothing was sent), a message never: a request that may have
 * arrived is never repeated. Every call ends within `timeoutMs`, retries included.
 */
export class ActionClient {
  private readonly services: Map<string, ServiceConfig>
  private readonly fetch: typeof fetch
  private readonly now: () => number
  private readonly sleep: (ms: number) => Promise<void>
  private readonly headerPrefix: string
  private readonly closing = new AbortController()

  constructor(private readonly options: ActionClientOptions) {
    this.services = new Map(options.services.map((service) => [service.serviceCode, service]))
    this.fetch = options.fetch ?? globalThis.fetch
    this.now = options.now ?? Date.now
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)))
    this.headerPrefix = options.headerPrefix ?? 'svc'
  }

  /** Whether a service code can be acted on: it has a `baseUrl` and a secret. */
  canReach(serviceCode: string): boolean {
    const service = this.services.get(serviceCode)
    return Boolean(service?.baseUrl && service.secrets[0])
  }

  /** Calls the cloud; resolves with its answer and how many requests were sent (never rejects). */
  async call(args: ActionArgs): Promise<{ answer: CloudAnswer; attempts: number }> {
    const service = this.services.get(args.serviceCode)
    const secret = service?.secrets[0]
    if (!service?.baseUrl || !secret) {
      return { answer: { kind: 'not-configured', message: `Service code "${args.serviceCode}" has no baseUrl and secret to act with.` }, attempts: 0 }
    }
    const deadline = this.now() + this.options.timeoutMs
    const waits = args.kind === 'STOP_TASK' ? STOP_RETRY_WAITS_MS : []
    let attempts = 0
    for (;;) {
      attempts++
      const answer = await this.attempt(service.baseUrl, secret, args, deadline)
      const wait = waits[attempts - 1]
      if (answer.kind !== 'unreachable' || wait === undefined || this.now() + wait >= deadline || this.closing.signal.aborted) return { answer, attempts }
      await this.sleep(wait)
    }
  }

  /** Ends every call under way at once (the gateway stops). */
  close(): void {
    this.closing.abort()
  }

  private async attempt(baseUrl: string, secret: string, args: ActionArgs, deadline: number): Promise<CloudAnswer> {
    const call = cloudCallOf(args)
    const url = new URL(baseUrl)
    url.pathname = `${url.pathname.replace(/\/+$/, '')}${call.path}`
    url.search = call.sentQuery
    url.hash = ''
    const timestamp = String(this.now())
    const signature = sign({ path: url.pathname, query: call.signedQuery, body: '', timestamp }, secret)
    const shown = `GET ${url.origin}${url.pathname}`
    const timeout = AbortSignal.timeout(Math.max(1, deadline - this.now()))
    try {
      const response = await this.fetch(url, {
        method: 'GET',
        headers: { [`${this.headerPrefix}-signature`]: signature, [`${this.headerPrefix}-timestamp`]: timestamp, accept: 'application/json' },
        signal: AbortSignal.any([timeout, this.closing.signal]),
      })
      const text = await response.text()
      if (!response.ok) return { kind: 'http', message: `${shown} answered HTTP ${response.status}.` }
      return readAnswer(text, shown)
    } catch (error) {
      if (timeout.aborted) return { kind: 'timeout', message: `${shown} gave no answer within ${this.options.timeoutMs} ms.` }
      // Refused or unresolvable: no request left this process, so a stop may be tried again.
      const code = (error as { cause?: { code?: unknown } }).cause?.code
      if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH') {
        return { kind: 'unreachable', message: `${shown} could not be reached (${String(code)}).` }
      }
      return { kind: 'timeout', message: `${shown} failed: ${typeof code === 'string' ? code : error instanceof Error ? error.message : String(error)}.` }
    }
  }
}

function readAnswer(text: string, shown: string): CloudAnswer {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return { kind: 'invalid', message: `${shown} answered something that is not JSON.` }
  }
  const { ret, msg } = (typeof json === 'object' && json !== null ? json : {}) as { ret?: unknown; msg?: unknown }
  const number = typeof ret === 'number' ? ret : typeof ret === 'string' && /^-?\d{1,9}$/.test(ret) ? Number(ret) : undefined
  if (number === undefined || !Number.isInteger(number)) return { kind: 'invalid', message: `${shown} answered without a ret.` }
  return { kind: 'answered', ret: number, message: typeof msg === 'string' ? msg.slice(0, 1000) : null }
}
