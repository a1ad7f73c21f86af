import { z } from 'zod'

/** The in-memory PGlite database: nothing is kept when the process ends. */
export const MEMORY_DATA_DIR = 'memory://'

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

const databaseSchema = z.strictObject({
  url: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  dataDir: z.string().min(1).default('./data'),
})

const ingestSchema = z.strictObject({
  bodyLimit: z.int().min(1024).max(16 * 1024 * 1024).default(64 * 1024),
  timestampToleranceSeconds: z.int().min(1).max(86_400).default(300),
  signatureHeaderPrefixes: z.array(z.string().regex(/^[a-z0-9-]+$/i)).min(1).default(['svc', 'xvs']),
  refusedBodyLimit: z.int().min(0).max(1024 * 1024).default(8 * 1024),
})

const upstreamSchema = z.strictObject({
  /** One task_list request may take this long before it counts as a network fault. */
  timeoutMs: z.int().min(100).max(120_000).default(5000),
  /** Further tries after a network fault or timeout (never after an answer with `ret != 0`). */
  retries: z.int().min(0).max(10).default(2),
  retryBaseMs: z.int().min(1).max(60_000).default(200),
  /** How long one answer serves every reader of the same service code. */
  cacheMs: z.int().min(0).max(600_000).default(2000),
  /** How often the poller keeps a task_list snapshot; 0 turns the poller off. */
  pollIntervalMs: z.int().min(0).max(86_400_000).default(10_000),
})

const graphqlSchema = z.strictObject({
  defaultPageSize: z.int().min(1).max(10_000).default(50),
  maxPageSize: z.int().min(1).max(10_000).default(500),
})

const realtimeSchema = z.strictObject({
  /** Undelivered events one subscriber may have before its socket is closed (4009). */
  subscriberBuffer: z.int().min(1).max(1_000_000).default(1000),
  /** Rows read per statement while replaying what a resuming subscriber missed. */
  replayPageSize: z.int().min(1).max(10_000).default(500),
})

/** The configuration file's schema; every key has a default, so `{}` is a valid file. */
export const configFileSchema = z
  .strictObject({
    port: z.int().min(0).max(65_535).default(4000),
    host: z.string().min(1).default('127.0.0.1'),
    database: databaseSchema.default({ dataDir: './data' }),
    services: z.array(serviceSchema).default([]),
    ingest: ingestSchema.default(() => ingestSchema.parse({})),
    upstream: upstreamSchema.default(() => upstreamSchema.parse({})),
    graphql: graphqlSchema.default(() => graphqlSchema.parse({})),
    realtime: realtimeSchema.default(() => realtimeSchema.parse({})),
    log: z.strictObject({ level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info') }).default({ level: 'info' }),
  })
  .superRefine((file, ctx) => {
    const seen = new Set<string>()
    file.services.forEach((service, index) => {
      if (seen.has(service.serviceCode)) {
        ctx.addIssue({ code: 'custom', path: ['services', index, 'serviceCode'], message: `"${service.serviceCode}" is configured twice` })
      }
      seen.add(service.serviceCode)
      if (service.verify !== 'off' && service.secrets.length === 0) {
        ctx.addIssue({ code: 'custom', path: ['services', index, 'secrets'], message: 'needs at least one secret unless verify is "off"' })
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
  baseUrl?: string
}

/** The resolved configuration every part of livegate is given. */
export interface Config extends Omit<ConfigFile, 'services'> {
  services: ServiceConfig[]
}
