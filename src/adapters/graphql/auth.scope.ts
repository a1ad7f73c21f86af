import { createHash, timingSafeEqual } from 'node:crypto'
import { isIP } from 'node:net'
import type { GraphQLError } from 'graphql'
import type { ApiKeyConfig, Config } from '../../config/config.schema.js'
import { graphqlError } from './graphql.errors.js'

/**
 * What a caller may read: every service code, or a list. Every store read takes it, so a key
 * scoped to one tenant cannot see another's rows through any field, loader, total or
 * subscription.
 */
export type Scope = ({ kind: 'all' } | { kind: 'codes'; serviceCodes: readonly string[] }) & {
  /** The key's name (what the audit records as who asked); absent with no keys configured (the local user). */
  keyName?: string
  /** The key may run only trusted documents, named by hash (trusted.documents.ts). */
  trustedOnly?: true
  /** The key may act (mutations to the cloud, webhook replays), not only read. */
  canOperate: boolean
  /**
   * A broadcaster's own view: only the tasks of this user (the cloud's `user_name`) within the
   * service codes, and what hangs off them (issue 42).
   */
  userName?: string
  /** Who asked, as the audit and `Query.viewer` name them (absent only in a scope made by hand). */
  caller?: Caller
}

/** Who asked: a key by its name, a token by its `sub`, or the local user of a gateway with no keys. */
export interface Caller {
  method: 'key' | 'token' | 'local'
  subject: string
  /** The token's `name` claim. */
  name?: string
  issuer?: string
  /** When the token expires (a key does not). */
  expiresAt?: Date
}

/** The local user's name in the audit: a gateway with no keys or tokens, on a loopback address. */
export const LOCAL_CALLER: Caller = { method: 'local', subject: 'local' }

/**
 * What a scope may read, without who asked: subscribers with the same access share one result
 * per event (shared.results.ts), whoever they are.
 */
export function accessOf(scope: Scope): Omit<Scope, 'caller'> {
  const { caller: _caller, ...access } = scope
  return access
}

/** The caller's scope as a store restriction: undefined reads everything. */
export function allowedCodes(scope: Scope): readonly string[] | undefined {
  return scope.kind === 'all' ? undefined : scope.serviceCodes
}

/** The caller's user as a store restriction (a broadcaster's own view): undefined reads every user's. */
export function allowedUser(scope: Scope): string | undefined {
  return scope.userName
}

/** Whether the scope covers a service code. */
export function inScope(scope: Scope, serviceCode: string): boolean {
  return scope.kind === 'all' || scope.serviceCodes.includes(serviceCode)
}

/**
 * Refuses a service-wide figure (one not made of a user's own tasks: the service's metrics, its
 * upstream, its reconciliation, webhook endpoints, the audit of others) to a broadcaster's own
 * view: `FORBIDDEN`. An empty answer would read as "the service has none", which is not true.
 */
export function requireWholeService(scope: Scope, what: string): void {
  if (scope.userName === undefined) return
  throw graphqlError(
    'FORBIDDEN',
    `${scope.keyName ? `"${scope.keyName}"` : 'The caller'} sees only the tasks of user "${scope.userName}": ` +
      `${what} is service-wide.`,
    { http: { status: 403 } },
  )
}

/**
 * Refuses an action to a key that may only read: `FORBIDDEN`, naming what was asked and what is
 * missing. `what` is a phrase such as "stopping a task".
 */
export function requireOperate(scope: Scope, what: string): void {
  if (scope.canOperate) return
  throw graphqlError(
    'FORBIDDEN',
    `The API key${scope.keyName ? ` "${scope.keyName}"` : ''} may only read: ` +
      `${what} needs "can": ["operate"] on the key.`,
    { http: { status: 403 } },
  )
}

const UNAUTHENTICATED_MESSAGE = 'A valid API key or token is required: send "Authorization: Bearer <key or token>".'

/**
 * The error of a missing or wrong key or token: HTTP 401, with one stable `reason` in its
 * extensions (`missing`, `unknown key`, `expired`, … : token.verifier.ts) and never the token.
 */
export function unauthenticated(reason = 'unknown key'): GraphQLError {
  return graphqlError('UNAUTHENTICATED', `${UNAUTHENTICATED_MESSAGE} (${reason})`, { reason, http: { status: 401 } })
}

/**
 * The scope of an `Authorization` value. With no keys configured, everything (livegate then
 * serves only on a loopback address); with keys, a matching `Bearer` key's scope, else null.
 * Every configured key is compared, in constant time, so timing says nothing about which matched.
 */
export function authenticate(authorization: string | undefined, keys: readonly ApiKeyConfig[]): Scope | null {
  // No keys: livegate serves only on loopback, and the local user may do everything.
  if (keys.length === 0) return { kind: 'all', canOperate: true, caller: LOCAL_CALLER }
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')
  if (!match) return null
  const presented = createHash('sha256')
    .update(match[1] as string)
    .digest()
  let found: ApiKeyConfig | undefined
  for (const key of keys) {
    if (timingSafeEqual(presented, key.sha256) && !found) found = key
  }
  if (!found) return null
  const caller: Caller = { method: 'key', subject: found.name }
  const scope: Scope =
    found.serviceCodes === '*'
      ? { kind: 'all', keyName: found.name, canOperate: found.canOperate, caller }
      : { kind: 'codes', serviceCodes: found.serviceCodes, keyName: found.name, canOperate: found.canOperate, caller }
  if (found.operations === 'trusted') scope.trustedOnly = true
  if (found.userName !== undefined) scope.userName = found.userName
  return scope
}

/**
 * The secure default: without API keys, data is served only on a loopback address. Returns the
 * reason livegate must not start, or undefined.
 */
export function unsafeBinding(config: Pick<Config, 'apiKeys' | 'host' | 'auth'>): string | undefined {
  if (config.apiKeys.length > 0 || config.auth.jwt || isLoopback(config.host)) return undefined
  return (
    `no API keys are configured, so livegate serves data only on a loopback address, but host is "${config.host}": ` +
    `add "apiKeys" (README, Operations) or bind to 127.0.0.1`
  )
}

function isLoopback(host: string): boolean {
  if (host === 'localhost') return true
  if (isIP(host) === 4) return host.startsWith('127.')
  return host === '::1'
}
