import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { z } from 'zod'
import { closestKey, jsonErrorPlace, keysAt } from './config.keys.js'
import { type Config, type ConfigFile, configFileSchema } from './config.schema.js'
import { databaseFromEnv } from './database.schema.js'
import { isWebhookSecret, WEBHOOK_SECRET_MESSAGE } from './webhook.schema.js'

/** A configuration that cannot be used; its message names the file and the key. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

/** Where the configuration comes from: a file path (optional) and the environment. */
export interface ConfigSources {
  /** From `--config`, else `LIVEGATE_CONFIG`. */
  file?: string
  /** The file's content already read, for embedding livegate (and for tests); `file` then only names it. */
  value?: Record<string, unknown>
  env: Record<string, string | undefined>
}

/**
 * Reads, validates and resolves the configuration. Environment overrides win over the file:
 * `PORT`, `HOST`, `DATABASE_URL`, `DATABASE_DIRECT_URL`, `DATABASE_READ_URLS` (comma-separated),
 * `LIVEGATE_DATA_DIR`, `LOG_LEVEL`, `LOG_FORMAT`, and the standard `OTEL_*` variables of tracing (see {@link tracingFromEnv}).
 */
export function loadConfig(sources: ConfigSources): Config {
  const { file, env } = sources
  const raw: Record<string, unknown> = sources.value ?? (file ? readJsonFile(file) : {})
  const withEnv = applyEnvOverrides(raw, env)
  const parsed = configFileSchema.safeParse(withEnv)
  if (!parsed.success) throw new ConfigError(describeIssues(file, env, parsed.error.issues, withEnv))
  return resolveSecrets(parsed.data, env, file)
}

function readJsonFile(file: string): Record<string, unknown> {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    throw new ConfigError(`config file ${file}: cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    throw new ConfigError(`config file ${file}: not valid JSON at ${jsonErrorPlace(text, error as Error)}`)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigError(`config file ${file}: must hold a JSON object`)
  }
  return value as Record<string, unknown>
}

function applyEnvOverrides(raw: Record<string, unknown>, env: ConfigSources['env']): Record<string, unknown> {
  const out: Record<string, unknown> = { ...raw }
  if (env.PORT !== undefined) out.port = envInteger('PORT', env.PORT)
  if (env.HOST !== undefined) out.host = env.HOST
  const database = databaseFromEnv(raw.database, env)
  if (database !== undefined) out.database = database
  if (env.LOG_LEVEL || env.LOG_FORMAT) {
    out.log = {
      ...(isObject(raw.log) ? raw.log : {}),
      ...(env.LOG_LEVEL ? { level: env.LOG_LEVEL } : {}),
      ...(env.LOG_FORMAT ? { format: env.LOG_FORMAT } : {}),
    }
  }
  const tracing = tracingFromEnv(env)
  if (tracing) out.tracing = { ...(isObject(raw.tracing) ? raw.tracing : {}), ...tracing }
  return out
}

/**
 * The OpenTelemetry SDK's own variables, read as its SDKs read them, so a deployment that sets
 * them for every service sets them for livegate too: a traces endpoint or `OTEL_TRACES_EXPORTER=otlp`
 * turns tracing on, `OTEL_TRACES_EXPORTER=none` or `OTEL_SDK_DISABLED=true` off (whatever else
 * says on), `OTEL_SERVICE_NAME` names the service. livegate sends OTLP over HTTP with JSON bodies.
 */
export function tracingFromEnv(env: ConfigSources['env']): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {}
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim()
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim()
  // The signal's own URL is used as given; the base URL gets the signal's path, as the spec says.
  if (traces) out.endpoint = traces
  else if (base) out.endpoint = `${base.replace(/\/+$/, '')}/v1/traces`
  if (out.endpoint !== undefined) out.enabled = true
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim()
  if (protocol === 'grpc') {
    const name = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
      ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'
      : 'OTEL_EXPORTER_OTLP_PROTOCOL'
    throw new ConfigError(
      `environment ${name}: livegate exports spans over OTLP/HTTP only; ` +
        `use "http/json" or "http/protobuf" and the collector's HTTP port (4318)`,
    )
  }
  const exporters = env.OTEL_TRACES_EXPORTER?.split(',')
    .map((name) => name.trim().toLowerCase())
    .filter(Boolean)
  if (exporters && exporters.length > 0) {
    const unknown = exporters.filter((name) => name !== 'otlp' && name !== 'none')
    if (unknown.length > 0)
      throw new ConfigError(
        `environment OTEL_TRACES_EXPORTER: "${unknown.join(',')}" is not supported: livegate exports over OTLP ` +
          `only ("otlp", or "none" for no tracing)`,
      )
    out.enabled = exporters.includes('otlp')
  }
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') out.enabled = false
  if (env.OTEL_SERVICE_NAME?.trim()) out.serviceName = env.OTEL_SERVICE_NAME.trim()
  return Object.keys(out).length > 0 ? out : undefined
}

function envInteger(name: string, value: string): number {
  if (!/^\d+$/.test(value)) throw new ConfigError(`environment ${name}: "${value}" is not a whole number`)
  return Number(value)
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

// The keys an environment variable may set, so a bad value is blamed on where it came from.
const ENV_KEYS: Readonly<Record<string, string>> = {
  port: 'PORT',
  host: 'HOST',
  'database.url': 'DATABASE_URL',
  'database.directUrl': 'DATABASE_DIRECT_URL',
  'database.readUrls': 'DATABASE_READ_URLS',
  'database.dataDir': 'LIVEGATE_DATA_DIR',
  'log.level': 'LOG_LEVEL',
  'log.format': 'LOG_FORMAT',
  'tracing.endpoint': 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'tracing.serviceName': 'OTEL_SERVICE_NAME',
}

// The traces endpoint comes from one of two variables: the signal's own wins, as in tracingFromEnv.
function envNameOf(key: string, env: ConfigSources['env']): string | undefined {
  if (key === 'tracing.endpoint' && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return 'OTEL_EXPORTER_OTLP_ENDPOINT'
  return ENV_KEYS[key.replace(/\[\d+\]$/, '')]
}

/**
 * Where a setting's value came from, for messages: `environment DATABASE_URL`, `config file
 * livegate.json: database.url`, or `the default of database.url`.
 */
export function settingOrigin(key: string, sources: Pick<ConfigSources, 'file' | 'env' | 'value'>): string {
  const name = envNameOf(key, sources.env)
  if (name && sources.env[name]) return `environment ${name}`
  if (sources.file) return `config file ${sources.file}: ${key}`
  return sources.value ? `configuration: ${key}` : `the default of ${key}`
}

const keyText = (path: readonly PropertyKey[]) =>
  path.reduce<string>(
    (text, part) => (typeof part === 'number' ? `${text}[${part}]` : text ? `${text}.${String(part)}` : String(part)),
    '',
  )

/** The value at `path` of what was read, or undefined where there is none. */
function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  return path.reduce<unknown>(
    (inner, part) =>
      typeof inner === 'object' && inner !== null ? (inner as Record<PropertyKey, unknown>)[part] : undefined,
    value,
  )
}

/**
 * One line for what is wrong. A key the schema needs that is missing beside an unknown key that
 * looks like it (`"servicecode"`) is said first, as the misspelling it is; an unknown key is
 * named with the known one it resembles; anything else is the schema's first word on it.
 */
function describeIssues(
  file: string | undefined,
  env: ConfigSources['env'],
  issues: readonly z.core.$ZodIssue[],
  value: unknown,
): string {
  const where = file ? `config file ${file}` : 'configuration'
  // A value that fits none of a union's forms (a secret: a string or { "env" }) holds each form's
  // own issues: a misspelt key of one of them is found there.
  const expand = (issue: z.core.$ZodIssue): z.core.$ZodIssue[] =>
    issue.code === 'invalid_union'
      ? [issue, ...issue.errors.flat().flatMap((inner) => expand({ ...inner, path: [...issue.path, ...inner.path] }))]
      : [issue]
  const every = issues.flatMap(expand)
  const unknownKeys = every.flatMap((issue) =>
    issue.code === 'unrecognized_keys' ? issue.keys.map((key) => ({ parent: issue.path, key })) : [],
  )
  for (const issue of every) {
    const wanted = issue.path.at(-1)
    if (issue.code !== 'invalid_type' || typeof wanted !== 'string' || valueAt(value, issue.path) !== undefined)
      continue
    const parent = issue.path.slice(0, -1)
    const typo = unknownKeys.find(
      (unknown) => keyText(unknown.parent) === keyText(parent) && closestKey(unknown.key, [wanted]) === wanted,
    )
    if (typo)
      return (
        `${where}: ${keyText(issue.path)}: missing, and ${keyText(parent) || 'the top level'} has "${typo.key}": ` +
        `did you mean "${wanted}"?`
      )
  }
  const issue = issues[0] && telling(issues[0])
  if (!issue) return `${where}: invalid`
  const key = keyText(issue.path)
  const unknown =
    issue.code === 'unrecognized_keys'
      ? unknownKeysText(issue.path, issue.keys)
      : issue.code === 'invalid_type' && valueAt(value, issue.path) === undefined
        ? `missing (${article(issue.expected)})`
        : issue.message
  const name = envNameOf(key, env)
  if (name && env[name]) return `environment ${name}: ${unknown}`
  return `${where}: ${key || '(top level)'}: ${unknown}`
}

/**
 * The issue that says what is wrong with a value that fits none of a union's forms: that of the form
 * whose type the value has (a duration written as a string is told the string's format), rather than
 * zod's "Invalid input"; the union's own when the value has none of their types.
 */
function telling(issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code !== 'invalid_union') return issue
  const fitting = issue.errors.find(
    (branch) => branch.length > 0 && !branch.some((inner) => inner.code === 'invalid_type' && inner.path.length === 0),
  )
  const inner = fitting?.[0]
  return inner ? telling({ ...inner, path: [...issue.path, ...inner.path] }) : issue
}

/** `a string`, `an object`: what a missing key wants. */
function article(expected: string): string {
  return `${/^[aeiou]/.test(expected) ? 'an' : 'a'} ${expected}`
}

/** `unknown key "prot": did you mean "port"?`, for each key the schema does not have. */
function unknownKeysText(path: readonly PropertyKey[], keys: readonly string[]): string {
  const known = keysAt(configFileSchema as unknown as z.ZodType, path)
  return keys
    .map((key) => {
      const meant = closestKey(key, known)
      return `unknown key "${key}"${meant ? `: did you mean "${meant}"?` : ''}`
    })
    .join('; ')
}

function resolveSecrets(file: ConfigFile, env: ConfigSources['env'], path: string | undefined): Config {
  const where = path ? `config file ${path}` : 'configuration'
  const resolve = (secret: string | { env: string }, key: string): string => {
    if (typeof secret === 'string') return secret
    const value = env[secret.env]
    if (!value) throw new ConfigError(`${where}: ${key}: environment variable ${secret.env} is not set`)
    return value
  }
  const services = file.services.map((service, index) => ({
    ...service,
    secrets: service.secrets.map((secret, secretIndex) =>
      resolve(secret, `services[${index}].secrets[${secretIndex}]`),
    ),
  }))
  // Keys are kept only as SHA-256 digests: a presented key is hashed and compared in constant time.
  const apiKeys = file.apiKeys.map((apiKey, index) => ({
    name: apiKey.name,
    sha256:
      apiKey.key !== undefined
        ? createHash('sha256')
            .update(resolve(apiKey.key, `apiKeys[${index}].key`))
            .digest()
        : Buffer.from(apiKey.sha256 as string, 'hex'),
    serviceCodes: apiKey.serviceCodes.includes('*') ? ('*' as const) : apiKey.serviceCodes,
    operations: apiKey.operations,
    canOperate: apiKey.can.includes('operate'),
    ...(apiKey.userName === undefined ? {} : { userName: apiKey.userName }),
  }))
  const endpoints = file.webhooks.endpoints.map((endpoint, index) => {
    const secret = resolve(endpoint.secret, `webhooks.endpoints[${index}].secret`)
    // A secret from the environment is checked once it is read; one in the file, by the schema.
    if (!isWebhookSecret(secret))
      throw new ConfigError(`${where}: webhooks.endpoints[${index}].secret: ${WEBHOOK_SECRET_MESSAGE}`)
    return { ...endpoint, secret }
  })
  const jwt = file.auth.jwt
  const auth = {
    ...file.auth,
    jwt: jwt && { ...jwt, secret: jwt.secret && resolve(jwt.secret, 'auth.jwt.secret') },
  }
  return { ...file, services, apiKeys, auth, webhooks: { ...file.webhooks, endpoints } }
}
