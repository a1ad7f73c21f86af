import type { FastifyInstance } from 'fastify'
import type { DestinationStream } from 'pino'
import type { Config } from '../../config/config.schema.js'
import { ConfigError } from '../../config/config.load.js'
import { unsafeBinding } from '../graphql/auth.scope.js'
import { type Database, openDatabase } from '../../storage/database.client.js'
import { backfillLegacyValues } from '../../storage/legacy.backfill.js'
import { buildServer, projectorOf } from './server.build.js'

/** A running gateway: its address, its parts, and how to stop it. */
export interface Gateway {
  /** The base URL it listens on, e.g. `http://127.0.0.1:4000`. */
  url: string
  server: FastifyInstance
  database: Database
  /**
   * Resolves once every callback acknowledged so far is folded into the task and user states
   * (the graph is a projection, folded just after each acknowledgement).
   */
  settle(): Promise<void>
  close(): Promise<void>
}

/** Options for {@link startGateway}. */
export interface StartOptions {
  /** An already open database (tests share one); opened from the config otherwise. */
  database?: Database
  now?: () => Date
  /** Where log lines go; standard output otherwise. */
  logStream?: DestinationStream
}

/** Opens the database, applies migrations, and listens. */
export async function startGateway(config: Config, options: StartOptions = {}): Promise<Gateway> {
  const unsafe = unsafeBinding(config)
  if (unsafe) throw new ConfigError(unsafe)
  const ownsDatabase = !options.database
  const database = options.database ?? (await openDatabase({ url: config.database.url, dataDir: config.database.dataDir }))
  try {
    await database.migrate()
    await backfillLegacyValues(database.db)
    const server = await buildServer({ config, database, ...(options.now ? { now: options.now } : {}), ...(options.logStream ? { logStream: options.logStream } : {}) })
    await server.listen({ port: config.port, host: config.host })
    const address = server.server.address()
    const port = typeof address === 'object' && address ? address.port : config.port
    const host = config.host.includes(':') ? `[${config.host}]` : config.host
    return {
      url: `http://${host}:${port}`,
      server,
      database,
      settle: () => projectorOf(server).catchUp(),
      async close() {
        await server.close()
        if (ownsDatabase) await database.close()
      },
    }
  } catch (error) {
    if (ownsDatabase) await database.close()
    throw error
  }
}
