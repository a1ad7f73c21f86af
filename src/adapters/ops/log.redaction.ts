import { createHash } from 'node:crypto'
import cluster from 'node:cluster'
import { hostname } from 'node:os'
import type { FastifyServerOptions } from 'fastify'
import { type DestinationStream, type LoggerOptions, stdSerializers } from 'pino'
import type { Config } from '../../config/config.schema.js'
import { prettyDestination } from './log.pretty.js'
import { activeTraceId } from '../../work/tracing.spans.js'

/** What pino writes in place of a secret. */
export const CENSOR = '[Redacted]'

// Secrets shorter than this are not scrubbed by value: a short literal would also match
// ordinary words, ids and numbers and could break the JSON line it was replaced in.
const MIN_LITERAL_SECRET = 8
// Error properties that hold a statement's bound values (drizzle, PGlite, postgres.js in debug
// mode): callback rows bind their headers, signatures included, so values are never logged.
const VALUE_KEYS = new Set(['params', 'parameters', 'queryOptions', 'args'])
const MAX_ERROR_DEPTH = 8

/**
 * Paths censored structurally, wherever such an object is logged: request headers, a bare headers
 * object, the graphql-ws `connection_init` payload, and any secrets or passwords.
 */
export function redactPaths(signaturePrefixes: readonly string[]): string[] {
  const prefixes = [...new Set(['svc', 'xvs', ...signaturePrefixes.map((prefix) => prefix.toLowerCase())])]
  const headerNames = ['authorization', 'x-api-key', 'cookie', ...prefixes.map((prefix) => `${prefix}-signature`)]
  const headerPaths = headerNames.flatMap((name) => [
    `req.headers["${name}"]`,
    `headers["${name}"]`,
    `request.headers["${name}"]`,
  ])
  const payloadPaths = ['connectionParams', 'payload', 'ctx.connectionParams', 'extra.connectionParams'].flatMap(
    (owner) => [`${owner}.authorization`, `${owner}.Authorization`, `${owner}["x-api-key"]`],
  )
  const secretPaths = ['authorization', 'secret', 'secrets', 'password', 'apiKey'].flatMap((name) => [
    name,
    `*.${name}`,
  ])
  return [
    ...headerPaths,
    ...payloadPaths,
    ...secretPaths,
    'services[*].secrets',
    'config.services[*].secrets',
    'database.url',
    'config.database.url',
  ]
}

/**
 * What is scrubbed by value: configured secrets as they are, and API keys by their SHA-256 (the
 * configuration keeps no key itself), matched against every key-shaped word.
 */
export interface KnownSecrets {
  literals: readonly string[]
  sha256?: ReadonlySet<string>
}

const NO_SECRETS: KnownSecrets = { literals: [] }
// Names whose value is a secret, wherever they appear as `name: value`, `name=value` or a JSON key.
const SECRET_NAMES = '(?:authorization|x-api-key|api[_-]?key|password|passwd|secret|[a-z0-9]+-signature)'
const QUOTED_SECRET = new RegExp(`(${SECRET_NAMES}\\\\?"\\s*:\\s*\\\\?")(?!\\[Redacted\\])[^"\\\\]+`, 'gi')
const TEXT_SECRET = new RegExp(
  `(${SECRET_NAMES}\\s*[:=]\\s*)(?!\\[Redacted\\])(?:(?:Bearer|Basic)\\s+)?[^"\\\\\\r\\n,;&}\\s]+`,
  'gi',
)
const KEY_SHAPED = /[A-Za-z0-9_~+/=-]{8,}/g

/**
 * Rewrites text that may hold a secret: URL credentials (`postgres://user:password@`), bearer and
 * basic tokens, the value after a secret-bearing name (`authorization`, `x-api-key`, `password`,
 * `*-signature`, …), the bound values of a failed statement, every configured secret, and any
 * word whose SHA-256 is an API key's. Works on plain text and on a serialized JSON line alike,
 * without breaking its quoting.
 */
export function scrubText(text: string, known: KnownSecrets = NO_SECRETS): string {
  let out = text
    .replace(/([a-z][a-z0-9+.-]*:\/\/[^\s:/?#@"\\]*:)[^\s/?#@"\\]+@/gi, `$1${CENSOR}@`)
    .replace(/\b(Bearer|Basic)(\s+)(?!\[Redacted\])[^\s"\\,;]+/gi, `$1$2${CENSOR}`)
    // A quoted name takes only a quoted value: `"password":null` must stay valid JSON.
    .replace(QUOTED_SECRET, `$1${CENSOR}`)
    .replace(TEXT_SECRET, `$1${CENSOR}`)
    // Drizzle puts a failed statement's values after "params: ", up to the stack's first frame.
    .replace(/(\\nparams: )(?!"|\\n {4}at )(?:[^"\\]|\\(?!n {4}at )[\s\S])*/g, `$1${CENSOR}`)
    .replace(/(\nparams: )(?=[^\n])[\s\S]*?(?=\n {4}at |$)/g, `$1${CENSOR}`)
  for (const secret of known.literals) {
    if (secret.length < MIN_LITERAL_SECRET) continue
    out = out.split(secret).join(CENSOR)
    const escaped = JSON.stringify(secret).slice(1, -1)
    if (escaped !== secret) out = out.split(escaped).join(CENSOR)
  }
  const hashes = known.sha256
  if (hashes && hashes.size > 0) {
    out = out.replace(KEY_SHAPED, (word) =>
      hashes.has(createHash('sha256').update(word).digest('hex')) ? CENSOR : word,
    )
  }
  return out
}

/**
 * A copy of an error (and its causes) fit to log: statement values dropped, every string
 * scrubbed. The original is untouched, since callers may still rethrow or inspect it.
 */
export function loggableError(error: unknown, secrets: KnownSecrets = NO_SECRETS, depth = 0): unknown {
  if (!(error instanceof Error) || depth > MAX_ERROR_DEPTH) return error
  const copy = Object.create(Object.getPrototypeOf(error) as object) as Record<string, unknown>
  for (const key of Object.getOwnPropertyNames(error)) {
    if (VALUE_KEYS.has(key) || key === 'stack' || key === 'message') continue
    const descriptor = Object.getOwnPropertyDescriptor(error, key)
    if (!descriptor || !('value' in descriptor)) continue
    Object.defineProperty(copy, key, { ...descriptor, value: loggableValue(descriptor.value, secrets, depth) })
  }
  // Read through the accessors, so a V8 accessor `stack` is copied as plain text.
  for (const key of ['message', 'stack'] as const) {
    const value = (error as unknown as Record<string, unknown>)[key]
    if (typeof value === 'string')
      Object.defineProperty(copy, key, {
        value: scrubText(value, secrets),
        enumerable: false,
        writable: true,
        configurable: true,
      })
  }
  return copy
}

function loggableValue(value: unknown, secrets: KnownSecrets, depth: number): unknown {
  if (typeof value === 'string') return scrubText(value, secrets)
  if (value instanceof Error) return loggableError(value, secrets, depth + 1)
  if (Array.isArray(value) && value.some((item) => item instanceof Error))
    return value.map((item) => loggableValue(item, secrets, depth + 1))
  return value
}

/** Every configured secret worth scrubbing by value: service secrets, the database password, API keys' digests. */
export function configuredSecrets(config: Pick<Config, 'services' | 'database' | 'apiKeys'>): KnownSecrets {
  const secrets = config.services.flatMap((service) => service.secrets)
  const url = config.database.url
  if (url) {
    try {
      const password = new URL(url).password
      if (password) secrets.push(password, decodeURIComponent(password))
    } catch {
      // An unreadable URL still has its credentials scrubbed by pattern.
    }
  }
  // Longest first, so a secret that contains another is censored whole.
  const literals = [...new Set(secrets)].sort((a, b) => b.length - a.length)
  return { literals, sha256: new Set(config.apiKeys.map((key) => key.sha256.toString('hex'))) }
}

/**
 * The gateway's pino options: JSON lines (readable ones on a terminal, see `log.format`) at the configured level,
 * secrets censored by path,
 * errors made loggable, and every line scrubbed once more just before it is written, so a
 * secret that slipped into a message or an unexpected field still never reaches the output.
 */
export function loggerOptions(
  config: Pick<Config, 'log' | 'services' | 'database' | 'ingest' | 'apiKeys'> & Partial<Pick<Config, 'tracing'>>,
  stream?: DestinationStream,
  tty = false,
): NonNullable<FastifyServerOptions['logger']> {
  const secrets = configuredSecrets(config)
  // Readable lines on a terminal (or when asked), JSON lines for files and collectors.
  const pretty = config.log.format === 'pretty' || (config.log.format === 'auto' && tty)
  const destination = stream ?? (pretty ? prettyDestination((text) => process.stdout.write(text), tty) : undefined)
  const options: LoggerOptions & { stream?: DestinationStream } = {
    level: config.log.level,
    redact: { paths: redactPaths(config.ingest.signatureHeaderPrefixes), censor: CENSOR },
    serializers: { err: (error: Error) => stdSerializers.err(loggableError(error, secrets) as Error) },
    hooks: { streamWrite: (line: string) => scrubText(line, secrets) },
    // Each line of a worker of `serve --workers N` names it (node:cluster's id; the primary is 0).
    ...(cluster.isWorker ? { base: { pid: process.pid, hostname: hostname(), worker: cluster.worker?.id } } : {}),
    ...(destination ? { stream: destination } : {}),
    // Traced, each line written inside a span names its trace, so a trace finds its lines.
    ...(config.tracing?.enabled ? { mixin: traceMixin } : {}),
  }
  return options as NonNullable<FastifyServerOptions['logger']>
}

// A fresh object each time: pino merges the line's own fields into what the mixin returns.
function traceMixin(): object {
  const traceId = activeTraceId()
  return traceId ? { traceId } : {}
}
