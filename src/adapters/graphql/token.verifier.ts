import { createHash } from 'node:crypto'
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  errors,
  exportJWK,
  importSPKI,
  type JWK,
  type JWTPayload,
  type JWTVerifyGetKey,
  jwtVerify,
} from 'jose'
import { ASYMMETRIC_ALGORITHMS, type JwtConfig } from '../../config/index.js'
import type { Scope } from './auth.scope.js'

/** A token longer than this is refused before it is parsed (a header larger than any provider's token). */
export const TOKEN_MAX_BYTES = 8192

/** Why a token was refused: the stable `extensions.reason` of its `UNAUTHENTICATED`. */
export type TokenReason =
  | 'too large'
  | 'malformed'
  | 'expired'
  | 'not yet valid'
  | 'wrong issuer'
  | 'wrong audience'
  | 'bad signature'
  | 'algorithm not allowed'
  | 'unknown signing key'
  | 'keys unavailable'
  | 'bad claims'

/** A token's outcome: the scope it grants, or why not (with its `sub` when it could be read, for the log). */
export type Verified = { scope: Scope } | { reason: TokenReason; subject?: string | undefined }

/** Verified tokens kept; past it the oldest is forgotten (verified again when it comes back). */
const CACHE_MAX = 20_000
/** An unknown `kid` fetches the JWKS again at most this often (jose's cooldown; jose keeps the loop). */
const JWKS_COOLDOWN_MS = 5_000
/** A JWKS kept longer than this is fetched again on the next token. */
const JWKS_MAX_AGE_MS = 10 * 60_000
const JWKS_TIMEOUT_MS = 5_000

/**
 * Verifies signed tokens from the team's identity provider with jose: the signature against the
 * JWKS (fetched at start, cached, fetched again for an unknown `kid` after a cooldown), the file's
 * keys or an HS256 secret; `iss`, `aud`, `exp` (required), `nbf` with a clock tolerance; only the
 * algorithms the keys name. A verified token is kept by its hash until it expires, so a token
 * costs a verification once, not per request.
 */
export class TokenVerifier {
  private key: JWTVerifyGetKey | Uint8Array | undefined
  private remote: ReturnType<typeof createRemoteJWKSet> | undefined
  private readonly algorithms: string[]
  private readonly cache = new Map<string, { scope: Scope; untilMs: number }>()

  constructor(
    private readonly config: JwtConfig,
    private readonly now: () => number = Date.now,
  ) {
    if (config.secret) this.algorithms = ['HS256']
    else if (config.keys) this.algorithms = [...new Set(config.keys.map((key) => key.alg))]
    else this.algorithms = [...ASYMMETRIC_ALGORITHMS]
  }

  /**
   * Readies the keys. A JWKS that cannot be fetched does not stop the start: its reason is
   * returned for the log, and each token asks for the JWKS again until it answers.
   */
  async start(): Promise<string | undefined> {
    const { jwksUrl, keys, secret } = this.config
    if (secret) this.key = new TextEncoder().encode(secret)
    else if (keys) this.key = createLocalJWKSet({ keys: await Promise.all(keys.map(jwkOf)) })
    else if (jwksUrl) {
      this.remote = createRemoteJWKSet(new URL(jwksUrl), {
        cooldownDuration: JWKS_COOLDOWN_MS,
        cacheMaxAge: JWKS_MAX_AGE_MS,
        timeoutDuration: JWKS_TIMEOUT_MS,
      })
      this.key = this.remote
      return this.remote.reload().then(
        () => undefined,
        (error: unknown) => `the JWKS at ${jwksUrl} could not be fetched (${messageOf(error)})`,
      )
    }
    return undefined
  }

  /** The scope a token grants, or why it is refused. */
  async verify(token: string): Promise<Verified> {
    if (Buffer.byteLength(token) > TOKEN_MAX_BYTES) return { reason: 'too large' }
    const hash = createHash('sha256').update(token).digest('base64url')
    const known = this.cache.get(hash)
    if (known && known.untilMs > this.now()) return { scope: known.scope }
    if (known) this.cache.delete(hash)
    if (!this.key) return { reason: 'keys unavailable' }
    let payload: JWTPayload
    try {
      const key = this.key
      const byClientId = this.config.audienceClaim === 'client_id'
      const options = {
        issuer: this.config.issuer,
        ...(byClientId ? {} : { audience: this.config.audience }),
        algorithms: this.algorithms,
        clockTolerance: this.config.clockToleranceSeconds,
        requiredClaims: ['exp', 'sub'],
        currentDate: new Date(this.now()),
      }
      ;({ payload } =
        key instanceof Uint8Array ? await jwtVerify(token, key, options) : await jwtVerify(token, key, options))
    } catch (error) {
      return { reason: reasonOf(error, this.remote !== undefined), subject: unverifiedSubject(token) }
    }
    if (this.config.audienceClaim === 'client_id' && payload.client_id !== this.config.audience)
      return { reason: 'wrong audience', subject: payload.sub }
    const scope = scopeOf(payload, this.config.claim)
    if (!scope) return { reason: 'bad claims', subject: payload.sub }
    this.remember(hash, scope, (payload.exp as number) * 1000)
    return { scope }
  }

  private remember(hash: string, scope: Scope, untilMs: number): void {
    if (untilMs <= this.now()) return
    if (this.cache.size >= CACHE_MAX) {
      const oldest = this.cache.keys().next()
      if (!oldest.done) this.cache.delete(oldest.value)
    }
    this.cache.set(hash, { scope, untilMs })
  }
}

/** A key of the file as a JWK: a PEM is imported with its algorithm. */
async function jwkOf(key: NonNullable<JwtConfig['keys']>[number]): Promise<JWK> {
  if (typeof key.pem !== 'string') return key as JWK
  const imported = await importSPKI(key.pem, key.alg, { extractable: true })
  return { ...(await exportJWK(imported)), alg: key.alg }
}

/** The scope a verified token's claims grant, or undefined when livegate's claim is not what it must be. */
function scopeOf(payload: JWTPayload, claimName: string): Scope | undefined {
  const claim = payload[claimName]
  if (typeof claim !== 'object' || claim === null || Array.isArray(claim)) return undefined
  const { serviceCodes, can = [], userName } = claim as Record<string, unknown>
  if (!isStrings(serviceCodes) || serviceCodes.length === 0 || !isStrings(can)) return undefined
  if (userName !== undefined && (typeof userName !== 'string' || userName === '')) return undefined
  const name = typeof payload.name === 'string' ? payload.name : undefined
  const caller = {
    method: 'token' as const,
    subject: payload.sub as string,
    ...(name ? { name } : {}),
    ...(payload.iss ? { issuer: payload.iss } : {}),
    expiresAt: new Date((payload.exp as number) * 1000),
  }
  const access = serviceCodes.includes('*')
    ? { kind: 'all' as const }
    : { kind: 'codes' as const, serviceCodes: [...serviceCodes] }
  return { ...access, canOperate: can.includes('operate'), ...(userName ? { userName } : {}), caller }
}

function isStrings(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string' && item !== '')
}

/** What jose's refusal means, as one stable reason. */
function reasonOf(error: unknown, remote: boolean): TokenReason {
  if (error instanceof errors.JWTExpired) return 'expired'
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'nbf') return 'not yet valid'
    if (error.claim === 'iss') return 'wrong issuer'
    if (error.claim === 'aud') return 'wrong audience'
    return 'bad claims'
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'bad signature'
  if (error instanceof errors.JOSEAlgNotAllowed) return 'algorithm not allowed'
  if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys)
    return 'unknown signing key'
  if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid) return 'keys unavailable'
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid) return 'malformed'
  if (error instanceof errors.JOSENotSupported || error instanceof errors.JWKInvalid) return 'malformed'
  // A fetch of the JWKS that failed (refused, an answer not 200) is not a JOSE refusal of the token.
  return remote ? 'keys unavailable' : 'malformed'
}

/** The `sub` of a token that was not verified, for the log line of its refusal only. */
function unverifiedSubject(token: string): string | undefined {
  try {
    const sub = decodeJwt(token).sub
    return typeof sub === 'string' ? sub.slice(0, 100) : undefined
  } catch {
    return undefined
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
