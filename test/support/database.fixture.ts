import { randomBytes } from 'node:crypto'
import postgres from 'postgres'
import { describe, it } from 'vitest'
import { MEMORY_DATA_DIR } from '../../src/config/index.js'
import { type Database, type DatabaseOptions, openDatabase } from '../../src/storage/database.client.js'

/** Which database the suite runs on: a PostgreSQL server when TEST_DATABASE_URL is set, else PGlite. */
export const serverUrl = process.env.TEST_DATABASE_URL || undefined
export const driverName = serverUrl ? 'postgres' : 'pglite'

/**
 * PgBouncer in transaction mode in front of that server (issue 44's stage of .ci/run): each test
 * database is then opened through it, with the server's own URL as `database.directUrl`.
 */
const poolerUrl = process.env.TEST_POOLER_URL || undefined

const NEEDS_SERVER = ' (skipped: needs a PostgreSQL server; set TEST_DATABASE_URL, as .ci/run does)'

/**
 * A suite that needs a PostgreSQL server (several processes, a server to stop): on PGlite it skips, and its name says
 * why.
 */
export const describeOnServer = (name: string, body: () => void) =>
  describe.skipIf(!serverUrl)(serverUrl ? name : `${name}${NEEDS_SERVER}`, body)

/** One test that needs a PostgreSQL server, named as {@link describeOnServer} names a suite. */
export const itOnServer = (name: string, body: () => Promise<void>, timeout?: number) =>
  it.skipIf(!serverUrl)(serverUrl ? name : `${name}${NEEDS_SERVER}`, body, timeout)

/** A database of its own for one test file, migrated, and how to throw it away. */
export interface TestDatabase {
  database: Database
  /** The URL for a second process to open the same database (server only): the pooler's with TEST_POOLER_URL. */
  url: string | undefined
  /** With TEST_POOLER_URL: the server's own URL of the database, for what needs a session. */
  directUrl?: string | undefined
  drop(): Promise<void>
}

/**
 * The environment a `livegate serve` process of the suite opens `db` with: DATABASE_URL, and with
 * TEST_POOLER_URL (PgBouncer in transaction mode as `url`) DATABASE_DIRECT_URL for what needs a session.
 */
export function databaseEnv(db: TestDatabase): { DATABASE_URL: string; DATABASE_DIRECT_URL?: string } {
  if (!db.url) throw new Error('a serve process needs a PostgreSQL server: set TEST_DATABASE_URL')
  return { DATABASE_URL: db.url, ...(db.directUrl ? { DATABASE_DIRECT_URL: db.directUrl } : {}) }
}

/**
 * Opens a fresh database: PGlite in memory, or a new database on the server so that test files
 * running side by side never see each other's rows.
 */
export async function openTestDatabase(options: Pick<DatabaseOptions, 'logger'> = {}): Promise<TestDatabase> {
  if (!serverUrl) {
    const database = await openDatabase({ dataDir: MEMORY_DATA_DIR, ...options })
    await database.migrate()
    return { database, url: undefined, drop: () => database.close() }
  }
  const name = `livegate_test_${randomBytes(6).toString('hex')}`
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database ${name}`)
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  const pooled = poolerUrl ? new URL(poolerUrl) : undefined
  if (pooled) pooled.pathname = `/${name}`
  const database = await openDatabase({
    url: (pooled ?? url).toString(),
    ...(pooled ? { directUrl: url.toString() } : {}),
    dataDir: MEMORY_DATA_DIR,
    maxConnections: 5,
    ...options,
  })
  await database.migrate()
  return {
    database,
    url: (pooled ?? url).toString(),
    ...(pooled ? { directUrl: url.toString() } : {}),
    async drop() {
      await database.close()
      await admin.unsafe(`drop database if exists ${name} with (force)`)
      await admin.end()
    },
  }
}
