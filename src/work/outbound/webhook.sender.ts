import { createHmac } from 'node:crypto'
import { Agent as HttpAgent, type ClientRequest, type IncomingMessage, request as httpRequest } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import { Webhook } from 'standardwebhooks'

/**
 * Standard Webhooks' `webhook-signature`, as the `standardwebhooks` package computes it, with
 * node's own HMAC: the package hashes in JavaScript, which cost more per delivery than the rest of
 * the attempt's Node work bar the HTTP client. The key is decoded once, by the package itself, so a
 * secret it refuses is refused here too; the delivery tests' receivers verify with the package.
 */
export class WebhookSigner {
  private readonly key: Buffer

  constructor(secret: string) {
    const checked = new Webhook(secret) as unknown as { key: Uint8Array }
    this.key = Buffer.from(checked.key)
  }

  /** The header's value for this id, Unix time (seconds) and body. */
  sign(id: string, seconds: number, body: string): string {
    return `v1,${createHmac('sha256', this.key).update(`${id}.${seconds}.${body}`).digest('base64')}`
  }
}

// Refused connections, resets and name failures: what an attempt's error says, never the body.
export function networkError(error: unknown, timeoutMs: number): string {
  const name = (error as { name?: string }).name
  if (name === 'TimeoutError' || name === 'AbortError') return `timed out after ${timeoutMs} ms`
  // node:http's errors carry their code themselves; fetch's carried it in their cause.
  const code = (error as { code?: string }).code
  if (code) return `connection failed (${code})`
  const cause = (error as { cause?: { code?: string; message?: string } }).cause
  if (cause?.code) return `connection failed (${cause.code})`
  return `request failed (${cause?.message ?? (error instanceof Error ? error.message : String(error))})`
}

/**
 * A URL's user and password as Basic authorization, sent as a header rather than in the request
 * line: a receiver behind Basic authentication is configured with them in its URL.
 */
export function splitCredentials(url: string): { url: string; authorization: Record<string, string> } {
  const parsed = new URL(url)
  if (!parsed.username && !parsed.password) return { url, authorization: {} }
  const basic = Buffer.from(`${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`).toString(
    'base64',
  )
  parsed.username = ''
  parsed.password = ''
  return { url: parsed.toString(), authorization: { authorization: `Basic ${basic}` } }
}

/** An attempt's request headers. */
type OutHeaders = Record<string, string>

/** What a receiver answered: the status, and its Retry-After when it gave one. */
export interface PostAnswer {
  status: number
  retryAfter: string | null
}

/** An attempt given up because it took longer than its time; its `name` is what fetch's would be. */
class TimeoutError extends Error {
  override name = 'TimeoutError'
}

/**
 * Posts to one endpoint over node:http's keep-alive pool, at most `sockets` at once. Node's fetch
 * (undici behind the WHATWG layer) spent about twice the Node CPU per request on loopback; this
 * keeps what the worker used of it: no redirect followed, the answer's body discarded so the
 * connection is reused, a deadline over the whole attempt, and a cut when the gateway stops.
 */
export class EndpointPoster {
  private readonly agent: HttpAgent
  private readonly request: typeof httpRequest
  private readonly url: URL
  /** Requests under way: a stop cuts them all (a listener each on one signal would pile up). */
  private readonly live = new Set<ClientRequest>()

  constructor(url: string, sockets: number) {
    this.url = new URL(url)
    const secure = this.url.protocol === 'https:'
    const pool = { keepAlive: true, maxSockets: sockets, scheduling: 'lifo' as const }
    this.agent = secure ? new HttpsAgent(pool) : new HttpAgent(pool)
    this.request = secure ? httpsRequest : httpRequest
  }

  /**
   * Posts once (not at all once `stop` is aborted); a connection the receiver closed while idle in
   * the pool is tried once afresh.
   */
  async post(headers: OutHeaders, body: string, timeoutMs: number, stop: AbortSignal): Promise<PostAnswer> {
    const deadline = Date.now() + timeoutMs
    try {
      return await this.once(headers, body, timeoutMs, stop)
    } catch (error) {
      const stale = (error as { staleSocket?: boolean }).staleSocket === true
      if (!stale || stop.aborted || Date.now() >= deadline) throw error
      return this.once(headers, body, deadline - Date.now(), stop)
    }
  }

  /** Cuts the requests under way: they fail with `reason`. */
  cut(reason: Error): void {
    for (const request of this.live) request.destroy(reason)
  }

  /** Closes the pooled connections. */
  close(): void {
    this.agent.destroy()
  }

  private once(headers: OutHeaders, body: string, timeoutMs: number, stop: AbortSignal): Promise<PostAnswer> {
    return new Promise<PostAnswer>((resolve, reject) => {
      if (stop.aborted) {
        reject(stop.reason)
        return
      }
      const request = this.request(this.url, {
        method: 'POST',
        agent: this.agent,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
      })
      this.live.add(request)
      const timer = setTimeout(() => request.destroy(new TimeoutError(`no answer within ${timeoutMs} ms`)), timeoutMs)
      const done = () => {
        clearTimeout(timer)
        this.live.delete(request)
      }
      request.once('response', (response: IncomingMessage) => {
        done()
        const retryAfter = response.headers['retry-after']
        // Read and dropped: the connection goes back to the pool once the body has passed.
        response.resume()
        response.on('error', () => {})
        resolve({ status: response.statusCode ?? 0, retryAfter: retryAfter ?? null })
      })
      request.on('error', (error: Error & { code?: string; staleSocket?: boolean }) => {
        done()
        // A reused connection reset before any answer: the receiver had closed it while idle.
        if (request.reusedSocket && error.code === 'ECONNRESET') error.staleSocket = true
        reject(error)
      })
      request.end(body)
    })
  }
}
