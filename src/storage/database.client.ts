import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Logger, sql } from 'drizzle-orm'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator'
import postgres, { type Sql } from 'postgres'
import { MEMORY_DATA_DIR } from '../config/config.schema.js'
import { StartupError } from '../config/startup.error.js'
import { describeConnectionError } from './database.errors.js'
import { lockDataDir } from './data-dir.lock.js'
import { preparing, unpipelined } from './prepared.client.js'
import * as callbackTables from './tables/callback.table.js'
import * as graphTables from './tables/graph.table.js'
import * as refusalTables from './tables/refusal.table.js'
import * as actionTables from './tables/action.table.js'
import * as webhookTables from './tables/webhook.table.js'
import * as recordingTables from './tables/recording.table.js'

/** Every table, as Drizzle knows them (its relational queries and a test's own handle take the same set). */
export const tables = {
  ...callbackTables,
  ...refusalTables,
  ...graphTables,
  ...actionTables,
  ...webhookTables,
  ...recordingTables,
}

/** The Drizzle database, the same type on PGlite and on postgres.js. */
export type Db = PgDatabase<PgQueryResultHKT, typeof tables>

/** An open database: the Drizzle handle, which driver is behind it, and how to close it. */
export interface Database {
  db: Db
  driver: 'pglite' | 'postgres'
  /** `url` is a pooler in transaction mode (a `directUrl` is set): no statement over it may rely on a session. */
  pooled?: boolean
  /** Applies the committed migrations in `schema/migrations/`; safe to run on every start. */
  migrate(): Promise<void>
  /**
   * Calls `onPayload` for every NOTIFY on `channel` (from any process on a server; in process on
   * PGlite), and `onListen` each time the channel is listened to again after the listening
   * connection was lost. Resolves once listening, to a function that stops.
   */
  listen(channel: string, onPayload: (payload: string) => void, onListen?: () => void): Promise<() => Promise<void>>
  close(): Promise<void>
}

/** Where to open the database: a PostgreSQL server by URL, else PGlite in `dataDir`. */
export interface DatabaseOptions {
  url?: string | undefined
  dataDir: string
  /** Pool size for a PostgreSQL server. */
  maxConnections?: number
  /** Sees every SQL statement; tests count them. */
  logger?: Logger
  /**
   * A direct connection to the primary for what needs a session: the channel's LISTEN and the
   * migrations. With it, `url` is a pooler in transaction mode: its pool prepares no statement.
   */
  directUrl?: string | undefined
  /** Where the URL came from (`environment DATABASE_URL`, `config file x: database.url`), for messages. */
  urlOrigin?: string
  /** The command that opens an embedded database, named in its data directory's lock. */
  command?: string
}

// src/storage and dist/storage both sit two levels below the package root.
const MIGRATIONS_FOLDER = fileURLToPath(new URL('../../schema/migrations', import.meta.url))

/**
 * Opens PGlite (embedded, one connection, no fsync) or a PostgreSQL server through postgres.js.
 * A server is asked `select 1` first, so one that cannot be reached fails here with a
 * {@link StartupError} in words; an embedded directory is locked for this process first.
 */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  return options.url ? openServer(options, options.url) : openEmbedded(options)
}

async function openServer(options: DatabaseOptions, url: string): Promise<Database> {
  const logger = options.logger ?? false
  const pooled = options.directUrl !== undefined
  const client = await connected(url, options.maxConnections ?? 10, pooled, options.urlOrigin)
  // The session's own connection: postgres.js keeps its listener on a connection of its own, and
  // the migrator's lock and transaction need one server session, which a pooler in transaction
  // mode does not keep between statements.
  let direct: Sql = client
  if (options.directUrl !== undefined) {
    direct = await connected(options.directUrl, 2, false, 'database.directUrl').catch(async (error: unknown) => {
      await client.end({ timeout: 0 }).catch(() => {})
      throw error
    })
  }
  const db = drizzlePostgres({ client, schema: tables, logger })
  const directDb = direct === client ? db : drizzlePostgres({ client: direct, schema: tables, logger })
  let ended = false
  return {
    db: db as unknown as Db,
    driver: 'postgres',
    pooled,
    migrate: () => migratedAlone(direct, () => migratePostgres(directDb, { migrationsFolder: MIGRATIONS_FOLDER })),
    async listen(channel, onPayload, onListen) {
      let first = true
      // postgres.js calls this once listening, and again each time its connection came back.
      const { unlisten } = await direct.listen(channel, onPayload, () => {
        if (!first) onListen?.()
        first = false
      })
      // Once the pool has ended, postgres.js's UNLISTEN would be refused with CONNECTION_ENDED
      // (or not, depending on whether its listen connection has already re-subscribed): the
      // channel is gone with the connection either way, so there is nothing left to undo.
      return async () => {
        if (!ended) await unlisten()
      }
    },
    close: async () => {
      ended = true
      await Promise.all([client.end({ timeout: 5 }), direct === client ? undefined : direct.end({ timeout: 5 })])
    },
  }
}

/**
 * A pool on `url`, asked `select 1` first, so a server that cannot be reached fails here with a
 * {@link StartupError} in words. A pooler's pool prepares nothing: a named statement lives in one
 * server session, and a pooler in transaction mode hands the next statement to another. Nor does
 * it pipeline statements ({@link unpipelined}).
 */
async function connected(url: string, max: number, pooled: boolean, origin: string | undefined): Promise<Sql> {
  const options = {
    max,
    onnotice: () => {},
    // A fault should surface as "unavailable" quickly rather than hang a callback.
    connect_timeout: 5,
  }
  // `?prepare=false` on the URL says the same of a pooler as `directUrl` does (the way before it).
  const unprepared = pooled || /[?&]prepare=false(&|$)/.test(url)
  const client = unprepared
    ? unpipelined(postgres(url, { ...options, prepare: false }))
    : preparing(postgres(url, options))
  try {
    await client`select 1`
  } catch (error) {
    await client.end({ timeout: 0 }).catch(() => {})
    throw new StartupError(`${describeConnectionError(error, url)}${origin ? ` (the URL is from ${origin})` : ''}`)
  }
  return client
}

async function openEmbedded(options: DatabaseOptions): Promise<Database> {
  const logger = options.logger ?? false
  // Loaded only here: a gateway on a PostgreSQL server never loads the embedded database.
  const [{ PGlite }, { drizzle: drizzlePglite }, { migrate: migratePglite }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('drizzle-orm/pglite'),
    import('drizzle-orm/pglite/migrator'),
  ])
  const memory = options.dataDir === MEMORY_DATA_DIR
  const lock = memory ? undefined : lockDataDir(options.dataDir, options.command ?? 'livegate')
  let client: InstanceType<typeof PGlite>
  try {
    const settings = pgliteOptions(PGlite.defaultStartParams)
    if (!memory && !existsSync(join(options.dataDir, 'PG_VERSION'))) await initdbApart(options.dataDir, settings)
    // Named even in memory: without a data directory PGlite would ignore the options.
    client = new PGlite(memory ? MEMORY_DATA_DIR : options.dataDir, settings)
    await client.waitReady
  } catch (error) {
    lock?.release()
    throw new StartupError(
      `the embedded database in ${memory ? 'memory' : options.dataDir} cannot be opened: ` +
        (error instanceof Error ? error.message : String(error)),
    )
  }
  const db = drizzlePglite({ client, schema: tables, logger })
  return {
    db: db as unknown as Db,
    driver: 'pglite',
    migrate: () => migrated(migratePglite(db, { migrationsFolder: MIGRATIONS_FOLDER })),
    async listen(channel, onPayload) {
      const unlisten = await client.listen(channel, onPayload)
      return async () => {
        if (!client.closed) await unlisten()
      }
    },
    close: async () => {
      try {
        if (!client.closed) await client.close()
      } finally {
        lock?.release()
      }
    },
  }
}

// What PGlite is sized for: one connection of a small gateway, not a shared server. PostgreSQL's
// defaults (128 MB of shared buffers, 64 MB for maintenance, 8 MB of temp buffers) are what most
// of its resident memory was; its WebAssembly heap cannot start below 128 MiB (the module's own
// minimum), so `initialMemory` is left alone. Measured in the startup bench.
const PGLITE_SETTINGS = [
  'shared_buffers=8MB',
  'work_mem=2MB',
  'maintenance_work_mem=8MB',
  'temp_buffers=1MB',
  'wal_buffers=256kB',
]

function pgliteOptions(defaults: readonly string[]): { startParams: string[] } {
  return { startParams: [...defaults, ...PGLITE_SETTINGS.flatMap((setting) => ['-c', setting])] }
}

// initdb grows PGlite's WebAssembly heap to about twice what a started database needs, and that
// heap never shrinks; compiling and running it also leaves the C allocator's arenas of the threads
// that did it holding about 100 MiB more, freed but never given back to the system (so a worker
// thread that ends does not take them along). Run in a child process that then exits, initdb
// leaves all of it behind, and a first start on a data directory idles as light as a restart, for
// about a second more. (In memory the cluster would have to be handed over as a tar image, which
// doubles an in-memory start, what every test pays: `memory://` keeps initdb in its own heap.)
const INITDB_PROCESS = `
const [pglite, dataDir, settings] = process.argv.slice(-3)
import(pglite).then(async ({ PGlite }) => {
  const client = new PGlite(dataDir, JSON.parse(settings))
  await client.waitReady
  await client.close()
})`

/** Runs initdb for a fresh data directory in a child process. */
async function initdbApart(dataDir: string, settings: { startParams: string[] }): Promise<void> {
  const args = [
    '-e',
    INITDB_PROCESS,
    '--',
    import.meta.resolve('@electric-sql/pglite'),
    dataDir,
    JSON.stringify(settings),
  ]
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] })
  let said = ''
  child.stderr.on('data', (chunk: Buffer) => {
    said += chunk
  })
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`initdb ended with ${code}: ${said.trim().split('\n').slice(-3).join(' ')}`)),
    )
  })
}

/**
 * Runs the migrations while one session of `direct` holds a session advisory lock: instances that
 * start at once on a fresh database would otherwise each create the same types and tables and all
 * but one fail (drizzle's migrator takes no lock). The migrations run on another connection of the
 * pool, so the session lock needs a direct connection, never a pooler's.
 */
async function migratedAlone(direct: Sql, run: () => Promise<void>): Promise<void> {
  const session = await direct.reserve()
  try {
    await session`select pg_advisory_lock(hashtextextended('livegate:migrate', 0))`
    try {
      await migrated(run())
    } finally {
      await session`select pg_advisory_unlock(hashtextextended('livegate:migrate', 0))`
    }
  } finally {
    session.release()
  }
}

// A failed migration names itself, and what it failed on, in one line.
async function migrated(run: Promise<void>): Promise<void> {
  try {
    await run
  } catch (error) {
    const cause =
      (error as { cause?: { message?: string } }).cause?.message ??
      (error instanceof Error ? error.message.split('\n')[0] : String(error))
    throw new StartupError(`the database migration failed: ${cause}`)
  }
}

/** The rows of a raw `execute`: postgres.js answers an array of rows, PGlite an object holding them. */
export function resultRows<T>(result: unknown): T[] {
  if (Array.isArray(result)) return result as T[]
  const rows = (result as { rows?: unknown }).rows
  return Array.isArray(rows) ? (rows as T[]) : []
}

/** Whether the database answers at all: `select 1`, for readiness and for waiting out an outage. */
export async function ping(db: Db): Promise<void> {
  await db.execute(sql`select 1`)
}
