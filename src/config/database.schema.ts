import { z } from 'zod'

/** The in-memory PGlite database: nothing is kept when the process ends. */
export const MEMORY_DATA_DIR = 'memory://'

/** How far behind the primary a replica may be and still serve reads, unless `database.maxReplicaLagMs` says. */
export const MAX_REPLICA_LAG_MS = 2000

const postgresUrl = z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')

export const databaseSchema = z
  .strictObject({
    url: postgresUrl.optional(),
    /**
     * A direct connection to the primary for what needs a session (the channel listener, migrations); with it,
     * `url` is taken to be a pooler in transaction mode.
     */
    directUrl: postgresUrl.optional(),
    /** Streaming replicas that serve reads; none by default. */
    readUrls: z.array(postgresUrl).optional(),
    /** A replica further behind than this is skipped until it catches up; {@link MAX_REPLICA_LAG_MS} by default. */
    maxReplicaLagMs: z.int().min(0).max(3_600_000).optional(),
    dataDir: z.string().min(1).default('./data'),
  })
  .refine((database) => database.url !== undefined || (!database.directUrl && !database.readUrls?.length), {
    message: 'directUrl and readUrls need url (a PostgreSQL server): the embedded database has neither',
  })

/**
 * The `database` section with the environment's values over the file's: `DATABASE_URL`,
 * `DATABASE_DIRECT_URL`, `DATABASE_READ_URLS` (comma-separated) and `LIVEGATE_DATA_DIR`. A value
 * that is no object is handed on as it is, for the schema to refuse with its place.
 */
export function databaseFromEnv(raw: unknown, env: Readonly<Record<string, string | undefined>>): unknown {
  const database = isObject(raw) ? { ...raw } : raw === undefined ? {} : raw
  if (!isObject(database)) return database
  if (env.DATABASE_URL) database.url = env.DATABASE_URL
  if (env.DATABASE_DIRECT_URL) database.directUrl = env.DATABASE_DIRECT_URL
  // A comma-separated list: a URL holds no bare comma (it would be percent-encoded).
  if (env.DATABASE_READ_URLS !== undefined) {
    database.readUrls = env.DATABASE_READ_URLS.split(',')
      .map((item) => item.trim())
      .filter(Boolean)
  }
  if (env.LIVEGATE_DATA_DIR) database.dataDir = env.LIVEGATE_DATA_DIR
  return Object.keys(database).length > 0 ? database : undefined
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
