import type { FastifyBaseLogger } from 'fastify'
import type { GraphQLError } from 'graphql'
import type { Config } from '../../config/config.schema.js'
import type { Metrics } from '../../work/metrics.registry.js'
import { authenticate, type Scope, unauthenticated } from './auth.scope.js'
import { TokenVerifier } from './token.verifier.js'

/** A `Bearer` value shaped as a JWT: three base64url parts (a key never decides this: it is matched first). */
const JWT_SHAPE = /^[\w-]+\.[\w-]+\.[\w-]*$/
/** Refused tokens logged per minute; past it they are counted, and one line says how many went unlogged. */
const REFUSALS_LOGGED_PER_MINUTE = 20

/**
 * Who is asking, for every transport: the one admission of a caller into the request core. An
 * `Authorization: Bearer` value (HTTP's header, graphql-ws's `connection_init` payload) is an
 * API key (matched in constant time, auth.scope.ts) or a signed token (token.verifier.ts);
 * either grants a {@link Scope}, and any other is refused `UNAUTHENTICATED` with its reason.
 * With neither keys nor tokens configured, livegate serves only on loopback, to the local user.
 */
export class AccessGate {
  private readonly verifier: TokenVerifier | undefined
  private window = { startedAt: 0, logged: 0, unlogged: 0 }

  constructor(
    private readonly config: Pick<Config, 'apiKeys' | 'auth'>,
    private readonly log: FastifyBaseLogger,
    private readonly metrics?: Pick<Metrics, 'auth'>,
    private readonly now: () => number = Date.now,
  ) {
    this.verifier = config.auth.jwt ? new TokenVerifier(config.auth.jwt, now) : undefined
  }

  /** Readies the token keys; a JWKS that does not answer is logged, and the gateway starts (keys work). */
  async start(): Promise<void> {
    const problem = await this.verifier?.start()
    if (problem) this.log.warn(`auth: ${problem}; tokens are refused (UNAUTHENTICATED) until it answers`)
  }

  /** The scope of an `Authorization` value, or its refusal (`UNAUTHENTICATED`, HTTP 401, close 4401). */
  async admit(authorization: string | undefined, address?: string): Promise<Scope | GraphQLError> {
    const { apiKeys } = this.config
    if (apiKeys.length === 0 && !this.verifier) return this.count(authenticate(authorization, apiKeys) as Scope)
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1]
    if (bearer === undefined) return this.refuse(address, 'none', authorization ? 'malformed' : 'missing')
    const keyed = apiKeys.length > 0 ? authenticate(authorization, apiKeys) : null
    if (keyed) return this.count(keyed)
    if (!this.verifier || !JWT_SHAPE.test(bearer.slice(0, 16_384))) return this.refuse(address, 'key', 'unknown key')
    const verified = await this.verifier.verify(bearer)
    if ('scope' in verified) return this.count(verified.scope)
    return this.refuse(address, 'token', verified.reason, verified.subject)
  }

  private count(scope: Scope): Scope {
    this.metrics?.auth.inc({ method: scope.caller?.method ?? 'key', outcome: 'accepted' })
    return scope
  }

  /** A refusal, counted, and logged with its reason and the token's `sub` (never the token), at most so often. */
  private refuse(address: string | undefined, method: string, reason: string, subject?: string): GraphQLError {
    this.metrics?.auth.inc({ method, outcome: reason })
    const now = this.now()
    if (now - this.window.startedAt >= 60_000) {
      if (this.window.unlogged > 0)
        this.log.warn({ unlogged: this.window.unlogged }, 'auth: more callers were refused than were logged')
      this.window = { startedAt: now, logged: 0, unlogged: 0 }
    }
    if (this.window.logged < REFUSALS_LOGGED_PER_MINUTE) {
      this.window.logged++
      this.log.info({ method, reason, sub: subject, address }, 'auth: caller refused')
    } else this.window.unlogged++
    return unauthenticated(reason)
  }
}
