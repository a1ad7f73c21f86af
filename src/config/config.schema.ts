import { z } from 'zod'
import { alertsSchema } from './alerts.schema.js'
import { type AuthConfig, authSchema } from './auth.schema.js'
import { databaseSchema } from './database.schema.js'
import { historySchema, reconcileSchema } from './history.schema.js'
import { type WebhookEndpointConfig, webhooksSchema } from './webhook.schema.js'

export { MAX_REPLICA_LAG_MS, MEMORY_DATA_DIR } from './database.schema.js'

// A secret may be written in the file, or named as an environment variable so the file holds none.
const secretSchema = z.union([
  z.string().min(1, 'a secret may not be empty'),
  z.strictObject({ env: z.string().min(1) }),
])

const serviceSchema = z.strictObject({
  serviceCode: z.string().min(1),
  secrets: z.array(secretSchema).default([]),
  verify: z.enum(['enforce', 'log', 'off']).default('enforce'),
  baseUrl: z.url().optional(),
})

const ingestSchema = z.strictObject({
  bodyLimit: z
    .int()
    .min(1024)
    .max(16 * 1024 * 1024)
    .default(64 * 1024),
  timestampToleranceSeconds: z.int().min(1).max(86_400).default(300),
  signatureHeaderPrefixes: z
    .array(z.string().regex(/^[a-z0-9-]+$/i))
    .min(1)
    .default(['svc', 'xvs']),
  refusedBodyLimit: z
    .int()
    .min(0)
    .max(1024 * 1024)
    .default(8 * 1024),
  /**
   * Refusals recorded per source address and minute (a token bucket); more are answered but not recorded. 0 records
   * none.
   */
  refusedPerMinute: z.int().min(0).max(1_000_000).default(60),
  /** Source addresses whose buckets are remembered; the least recently seen is forgotten beyond it. */
  refusedTrackedAddresses: z.int().min(1).max(10_000_000).default(10_000),
  /** Rows the refusals table keeps; the oldest beyond it are pruned. */
  refusedMaxRows: z.int().min(1).max(1_000_000_000).default(100_000),
})

const spoolSchema = z.strictObject({
  /** Where callbacks wait while the database is down; by default `<database.dataDir>/spool`. */
  dir: z.string().min(1).optional(),
  /** Bytes the spool may hold; beyond it a callback the database cannot take is answered 503. 0 turns the spool off. */
  maxBytes: z
    .int()
    .min(0)
    .max(2 ** 50)
    .default(256 * 1024 * 1024),
})

const upstreamSchema = z.strictObject({
  /** One task_list request may take this long before it counts as a network fault. */
  timeoutMs: z.int().min(100).max(120_000).default(5000),
  /** Further tries after a network fault or timeout (never after an answer with `ret != 0`). */
  retries: z.int().min(0).max(10).default(2),
  retryBaseMs: z.int().min(1).max(60_000).default(200),
  /** Retired (see retired.settings.ts): read so older files load, warned about once at start. */
  cacheMs: z.int().min(0).max(600_000).optional(),
  /** How often the poller keeps a task_list snapshot; 0 turns the poller off. */
  pollIntervalMs: z.int().min(0).max(86_400_000).default(5000),
  /** The longest wait between two polls of a failing task_list (the back-off's cap). */
  maxBackoffMs: z.int().min(100).max(86_400_000).default(60_000),
  /**
   * An action (cancel_task, send_txt_msg) is FAILED when the cloud has not answered within this; the mutation answers
   * by then.
   */
  actionTimeoutMs: z.int().min(100).max(120_000).default(10_000),
})

const limitsSchema = z.strictObject({
  /** Actions (mutations to the cloud) one API key may ask for per minute; more are refused with RATE_LIMITED. */
  actionsPerMinute: z.int().min(1).max(100_000).default(30),
})

const actionsSchema = z.strictObject({
  /** Days the audit of actions (and refused attempts) is kept; 0 keeps it forever. */
  retention: z.int().min(0).max(36_500).default(400),
})

const archiveSchema = z.strictObject({
  /** How often each service code's archive (`list_files`) is asked for; 0 never asks. */
  pollIntervalMs: z.int().min(0).max(86_400_000).default(60_000),
  /** The newest files one `list_files` request asks for. */
  limit: z.int().min(1).max(1000).default(100),
  /** How long after a task ended with `live_only` 0 its recording may take before it is missing. */
  graceMs: z
    .int()
    .min(0)
    .max(7 * 86_400_000)
    .default(600_000),
})

const graphqlSchema = z.strictObject({
  defaultPageSize: z.int().min(1).max(10_000).default(50),
  maxPageSize: z.int().min(1).max(10_000).default(500),
  /** Nesting of selections in one operation. */
  maxDepth: z.int().min(1).max(100).default(12),
  /** Aliased fields in one operation. */
  maxAliases: z.int().min(0).max(10_000).default(30),
  /** Fields one operation may resolve, a connection's selection counted once per item it may return. */
  maxCost: z.int().min(1).max(100_000_000).default(100_000),
  /** Serve `/graphql` as an Apollo Federation 2 subgraph too (`_service`, `_entities`); see subgraph.schema.ts. */
  federation: z.boolean().default(false),
  /** The manifests (JSON, hash → document) that keys with `operations: "trusted"` may run. */
  trustedDocuments: z
    .union([z.string().min(1), z.array(z.string().min(1))])
    .transform((paths) => (typeof paths === 'string' ? [paths] : paths))
    .default([]),
})

const realtimeSchema = z.strictObject({
  /** Undelivered events one subscriber may have before its socket is closed (4009). */
  subscriberBuffer: z.int().min(1).max(1_000_000).default(1000),
  /** Rows read per statement while replaying what a resuming subscriber missed. */
  replayPageSize: z.int().min(1).max(10_000).default(500),
  /**
   * Between two pings of a websocket; a socket that has not answered one by the next is terminated. 0
   * pings none (a proxy in front then needs its own idle timeout). 12 s is graphql-ws's own.
   */
  keepAliveMs: z.int().min(0).max(3_600_000).default(12_000),
})

const opsSchema = z.strictObject({
  /** How long `/readyz` waits for the database to answer `select 1` before it says not ready. */
  readyTimeoutMs: z.int().min(10).max(60_000).default(2000),
})

const retentionSchema = z.strictObject({
  /** Callbacks received longer ago than this are pruned; 0 keeps them forever. */
  callbacksDays: z.int().min(0).max(36_500).default(90),
  /** Refused deliveries recorded longer ago than this are pruned; 0 keeps them forever. */
  refusalsDays: z.int().min(0).max(36_500).default(7),
  /** Between two prunes; 0 turns the scheduled prune off. */
  intervalMs: z
    .int()
    .min(0)
    .max(7 * 86_400_000)
    .default(3_600_000),
  /** Rows deleted per statement, so a prune never holds long locks or one huge transaction. */
  batchSize: z.int().min(1).max(100_000).default(5000),
})

const tracingSchema = z.strictObject({
  /** Export spans over OTLP/HTTP; also turned on by the standard `OTEL_*` variables (config.load.ts). */
  enabled: z.boolean().default(false),
  /** The OTLP/HTTP traces URL, `/v1/traces` included; the OTLP default when none is given. */
  endpoint: z.url().default('http://localhost:4318/v1/traces'),
  /** The `service.name` the spans are exported under. */
  serviceName: z.string().min(1).default('livegate'),
})

const apiKeySchema = z
  .strictObject({
    name: z.string().min(1),
    /** The key itself (or from an environment variable). */
    key: secretSchema.optional(),
    /** Or only its SHA-256, in hex, so the file holds no secret. */
    sha256: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hexadecimal characters')
      .optional(),
    /** The service codes whose data the key may read; `["*"]` for all. */
    serviceCodes: z.array(z.string().min(1)).min(1),
    /** `trusted`: the key runs only documents of `graphql.trustedDocuments`, named by their hash. */
    operations: z.enum(['any', 'trusted']).default('any'),
    /** What the key may do beyond reading: `operate` acts (mutations to the cloud, webhook replays). */
    can: z.array(z.enum(['operate'])).default([]),
    /** A broadcaster's own view: only the tasks of this user (the cloud's `user_name`) within the codes. */
    userName: z.string().min(1).optional(),
  })
  .refine((key) => (key.key === undefined) !== (key.sha256 === undefined), {
    message: 'give exactly one of "key" or "sha256"',
  })

/** The configuration file's schema; every key has a default, so `{}` is a valid file. */
export const configFileSchema = z
  .strictObject({
    port: z.int().min(0).max(65_535).default(4000),
    host: z.string().min(1).default('127.0.0.1'),
    /** Processes serving the one port (node:cluster); by default the cores on a server, 1 on PGlite. */
    workers: z.int().min(1).max(256).optional(),
    database: databaseSchema.default({ dataDir: './data' }),
    services: z.array(serviceSchema).default([]),
    apiKeys: z.array(apiKeySchema).default([]),
    auth: authSchema.default({}),
    ingest: ingestSchema.default(() => ingestSchema.parse({})),
    spool: spoolSchema.default(() => spoolSchema.parse({})),
    upstream: upstreamSchema.default(() => upstreamSchema.parse({})),
    graphql: graphqlSchema.default(() => graphqlSchema.parse({})),
    realtime: realtimeSchema.default(() => realtimeSchema.parse({})),
    ops: opsSchema.default(() => opsSchema.parse({})),
    retention: retentionSchema.default(() => retentionSchema.parse({})),
    limits: limitsSchema.default(() => limitsSchema.parse({})),
    actions: actionsSchema.default(() => actionsSchema.parse({})),
    archive: archiveSchema.default(() => archiveSchema.parse({})),
    history: historySchema.default(() => historySchema.parse({})),
    reconcile: reconcileSchema.default(() => reconcileSchema.parse({})),
    tracing: tracingSchema.default(() => tracingSchema.parse({})),
    webhooks: webhooksSchema.default(() => webhooksSchema.parse({})),
    alerts: alertsSchema.default(() => alertsSchema.parse({})),
    log: z
      .strictObject({
        level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
        /**
         * `pretty`: one readable line per entry; `json`: one JSON object per line; `auto`: pretty on a terminal, JSON
         * otherwise.
         */
        format: z.enum(['auto', 'pretty', 'json']).default('auto'),
      })
      .default({ level: 'info', format: 'auto' }),
  })
  .superRefine((file, ctx) => {
    file.apiKeys.forEach((key, index) => {
      if (key.operations === 'trusted' && file.graphql.trustedDocuments.length === 0) {
        ctx.addIssue({
          code: 'custom',
          path: ['apiKeys', index, 'operations'],
          message: '"trusted" needs graphql.trustedDocuments (the manifests it may run)',
        })
      }
    })
    const seen = new Set<string>()
    file.services.forEach((service, index) => {
      if (seen.has(service.serviceCode)) {
        ctx.addIssue({
          code: 'custom',
          path: ['services', index, 'serviceCode'],
          message: `"${service.serviceCode}" is configured twice`,
        })
      }
      seen.add(service.serviceCode)
      if (service.verify !== 'off' && service.secrets.length === 0) {
        ctx.addIssue({
          code: 'custom',
          path: ['services', index, 'secrets'],
          message: 'needs at least one secret unless verify is "off"',
        })
      }
    })
  })

/** The configuration as written, before secrets named by environment variable are resolved. */
export type ConfigFile = z.output<typeof configFileSchema>

/** One service code livegate accepts callbacks for, with its secrets resolved. */
export interface ServiceConfig {
  serviceCode: string
  /** Every secret that may have signed a request; more than one while a secret rotates. */
  secrets: string[]
  verify: 'enforce' | 'log' | 'off'
  baseUrl?: string | undefined
}

/** An API key as livegate holds it: only its SHA-256, and what it may read. */
export interface ApiKeyConfig {
  name: string
  sha256: Buffer
  /** `'*'` for every service code. */
  serviceCodes: readonly string[] | '*'
  /** `trusted`: only documents of the trusted-documents manifests, by hash. */
  operations: 'any' | 'trusted'
  /** Whether the key may act (mutations, webhook replays), not only read. */
  canOperate: boolean
  /** A broadcaster's own view: only this user's tasks and what hangs off them. */
  userName?: string | undefined
}

/** The resolved configuration every part of livegate is given. */
export interface Config extends Omit<ConfigFile, 'services' | 'apiKeys' | 'webhooks' | 'auth'> {
  services: ServiceConfig[]
  apiKeys: ApiKeyConfig[]
  auth: AuthConfig
  webhooks: Omit<ConfigFile['webhooks'], 'endpoints'> & { endpoints: WebhookEndpointConfig[] }
}
