/**
 * Why a `task_list` request gave no answer:
 * - `NOT_CONFIGURED`: the service code is unknown, or has no `baseUrl` or no secret to sign with;
 * - `RET`: the service answered with a non-zero `ret` (a refusal: bad signature, unknown code, …);
 * - `HTTP`: the service answered with a non-2xx HTTP status;
 * - `TIMEOUT`: no complete answer within `upstream.timeoutMs`;
 * - `NETWORK`: the connection failed (refused, reset, DNS);
 * - `INVALID_ANSWER`: a 2xx answer that is not a `task_list` answer.
 */
export type UpstreamErrorKind = 'NOT_CONFIGURED' | 'RET' | 'HTTP' | 'TIMEOUT' | 'NETWORK' | 'INVALID_ANSWER'

/** The kinds a retry can cure; an answer the service gave on purpose is never asked again. */
export const RETRYABLE_KINDS: ReadonlySet<UpstreamErrorKind> = new Set(['TIMEOUT', 'NETWORK'])

/** What else an {@link UpstreamError} carries, by kind. */
export interface UpstreamErrorDetails {
  /** The service's non-zero `ret` (kind `RET`). */
  ret?: number
  /** The HTTP status (kind `HTTP`). */
  status?: number
  cause?: unknown
}

/**
 * A failed `task_list` request, as data the caller can branch on. The message names the service
 * code and the URL without credentials; it never holds a secret, a signature or an answer body.
 */
export class UpstreamError extends Error {
  override name = 'UpstreamError'
  readonly kind: UpstreamErrorKind
  readonly serviceCode: string
  readonly ret?: number
  readonly status?: number

  constructor(kind: UpstreamErrorKind, serviceCode: string, message: string, details: UpstreamErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause })
    this.kind = kind
    this.serviceCode = serviceCode
    if (details.ret !== undefined) this.ret = details.ret
    if (details.status !== undefined) this.status = details.status
  }

  /** Whether asking again may succeed: timeouts, network faults and HTTP 5xx. */
  get retryable(): boolean {
    return RETRYABLE_KINDS.has(this.kind) || (this.kind === 'HTTP' && this.status !== undefined && this.status >= 500)
  }
}
