import { signCallback } from '../model/callback.sign.js'
import type { ScenarioCallback } from './scenario.model.js'
import type { SimulatedService } from './task-list.server.js'

/** Where and how {@link CallbackSender} delivers. */
export interface CallbackSenderOptions {
  /** The gateway's base URL, e.g. `http://127.0.0.1:4000`. */
  gatewayUrl: string
  /** The callback address below it. */
  path?: string
  services: readonly SimulatedService[]
  /** `svc` sends `svc-signature` / `svc-timestamp`. */
  headerPrefix?: string
  timeoutMs?: number
  fetch?: typeof fetch
  now?: () => number
}

/** A delivery the gateway did not answer with 200. */
export interface DeliveryFailure {
  type: number
  taskId: string
  /** The HTTP status, or `network` when no answer came. */
  status: number | 'network'
  /** The start of the answer, or the network error. */
  detail: string
}

/** What the sender has done so far. */
export interface DeliveryStats {
  sent: number
  /** Answers by HTTP status (`"200"`, `"401"`, …), and `network` for deliveries that got none. */
  answers: Record<string, number>
  lastFailure: DeliveryFailure | null
}

const USER_AGENT = 'livegate-simulator'

/**
 * Signs each callback with its service's secret, exactly as the service does, and POSTs it as a
 * form. One at a time: the gateway should see a task's callbacks in the order they happened.
 */
export class CallbackSender {
  private readonly url: string
  private readonly secrets: Map<string, string>
  private readonly headerPrefix: string
  private readonly timeoutMs: number
  private readonly fetch: typeof fetch
  private readonly now: () => number
  private lastTimestamp = 0
  private readonly counts: DeliveryStats = { sent: 0, answers: {}, lastFailure: null }

  constructor(options: CallbackSenderOptions) {
    this.url = `${options.gatewayUrl.replace(/\/+$/, '')}${options.path ?? '/callbacks'}`
    this.secrets = new Map(options.services.map((service) => [service.serviceCode, service.secret]))
    this.headerPrefix = options.headerPrefix ?? 'svc'
    this.timeoutMs = options.timeoutMs ?? 10_000
    this.fetch = options.fetch ?? globalThis.fetch
    this.now = options.now ?? Date.now
  }

  /** Delivers one callback and counts its answer; never rejects. */
  async deliver(callback: ScenarioCallback): Promise<number | 'network'> {
    const secret = this.secrets.get(callback.serviceCode)
    if (secret === undefined) throw new Error(`no secret for service code ${callback.serviceCode}`)
    // The gateway keeps two equal callbacks with equal signed timestamps once (a redelivery), so
    // two callbacks of one millisecond get distinct timestamps, as two real events would.
    const nowMs = Math.max(this.now(), this.lastTimestamp + 1)
    this.lastTimestamp = nowMs
    const request = signCallback(callback.fields, { url: this.url, secret, headerPrefix: this.headerPrefix, nowMs })
    this.counts.sent++
    let status: number | 'network'
    let detail = ''
    try {
      const response = await this.fetch(request.url, {
        method: request.method,
        headers: { ...request.headers, 'user-agent': USER_AGENT },
        ...(request.body !== undefined ? { body: request.body } : {}),
        signal: AbortSignal.timeout(this.timeoutMs),
      })
      status = response.status
      detail = (await response.text()).slice(0, 300)
    } catch (error) {
      status = 'network'
      detail = error instanceof Error ? `${error.message}${causeCode(error)}` : String(error)
    }
    const key = String(status)
    this.counts.answers[key] = (this.counts.answers[key] ?? 0) + 1
    if (status !== 200) this.counts.lastFailure = { type: callback.type, taskId: callback.taskId, status, detail }
    return status
  }

  /** A copy of the counts. */
  stats(): DeliveryStats {
    return {
      sent: this.counts.sent,
      answers: { ...this.counts.answers },
      lastFailure: this.counts.lastFailure ? { ...this.counts.lastFailure } : null,
    }
  }
}

function causeCode(error: Error): string {
  const code = (error.cause as { code?: unknown } | undefined)?.code
  return typeof code === 'string' ? ` (${code})` : ''
}
