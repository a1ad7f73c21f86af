import cluster from 'node:cluster'
import { once } from 'node:events'
import { createServer, type Server } from 'node:net'
import type { FastifyInstance } from 'fastify'
import type { DestinationStream } from 'pino'
import type { SpanExporter } from '@opentelemetry/sdk-trace-base'
import type { Config } from './config/config.schema.js'
import { ConfigError } from './config/config.load.js'
import { StartupError } from './config/startup.error.js'
import { retiredSettingWarnings } from './config/retired.settings.js'
import { ingestPolicy } from './model/callback.verdict.js'
import { type Database, openDatabase } from './storage/database.client.js'
import { buildParts, type GatewayParts, startParts, stopParts } from './gateway.parts.js'
import { backfillLegacyValues } from './storage/legacy.backfill.js'
import { unsafeBinding } from './adapters/graphql/auth.scope.js'
import { createHttpServer, registerRoutes } from './adapters/http/server.build.js'
import type { Tracing } from './adapters/ops/tracing.sdk.js'

/**
 * The assembly of a gateway process: the one place that builds the database, the units of work
 * (through gateway.parts.ts) and the adapters, and that owns the order in which they start and
 * stop. Adapters are handed the parts they serve and only register routes; nothing reaches a part
 * back through a lookup.
 *
 * Start: port check, database (migrated), HTTP server and its logger, then the parts, built, the routes, and the
 * parts started in the one order of `partUnits` (gateway.parts.ts), and, once every part has started, the
 * listening socket. Stop: the HTTP server first (no new request; sockets closed; the requests under way
 * answered), then the parts in the reverse order of their start, then the database the gateway opened.
 */

/** A running gateway: its address, its parts, and how to stop it. */
export interface Gateway {
  /** The base URL it listens on, e.g. `http://127.0.0.1:4000`. */
  url: string
  server: FastifyInstance
  database: Database
  /** Its units of work, as the assembly built them. */
  parts: GatewayParts
  /** Resolves once every callback acknowledged so far is folded into the task and user states (the projection). */
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
  /** Where `database.url` came from, named when the server cannot be reached. */
  databaseUrlOrigin?: string
  /** The command starting the gateway, named in an embedded data directory's lock. */
  command?: string
  /** Standard output is a terminal (readable log lines with `log.format: auto`). */
  tty?: boolean
  /** With `tracing.enabled`: where spans go instead of OTLP (tests hand an in-memory exporter). */
  spanExporter?: SpanExporter
  /** A task page's pure-data parts as JSON text; by default where `JSON.rawJSON` exists (request.pipeline.ts). */
  jsonText?: boolean | undefined
  /**
   * Whether this process puts webhook events in line and delivers them (the default). An HTTP
   * worker of `serve --workers N` leaves it to the cluster's webhook worker (webhooks.assembly.ts).
   */
  deliverWebhooks?: boolean | undefined
}

/**
 * Checks the port, opens the database (locking an embedded data directory), applies migrations,
 * and listens. Any failure closes whatever was opened and rejects with a {@link StartupError}
 * (or a {@link ConfigError}) whose message is one line for an operator.
 */
export async function startGateway(config: Config, options: StartOptions = {}): Promise<Gateway> {
  const unsafe = unsafeBinding(config)
  if (unsafe) throw new ConfigError(unsafe)
  // The port first: a busy port must not cost a database connection, nor touch the data directory.
  const held = await holdPort(config)
  const ownsDatabase = !options.database
  let database: Database | undefined = options.database
  let server: FastifyInstance | undefined
  let parts: GatewayParts | undefined
  let tracing: Tracing | undefined
  try {
    // The SDK is loaded only when tracing is on: off, the API's helpers test one flag (work/tracing.spans.ts).
    if (config.tracing.enabled) {
      const { startTracing } = await import('./adapters/ops/tracing.sdk.js')
      tracing = startTracing(config, options.spanExporter ? { exporter: options.spanExporter } : {})
    }
    database ??= await openDatabase({
      url: config.database.url,
      directUrl: config.database.directUrl,
      dataDir: config.database.dataDir,
      ...(options.databaseUrlOrigin ? { urlOrigin: options.databaseUrlOrigin } : {}),
      ...(options.command ? { command: options.command } : {}),
    })
    await database.migrate()
    await backfillLegacyValues(database.db)
    server = createHttpServer({
      config,
      ...(options.logStream ? { logStream: options.logStream } : {}),
      ...(options.tty !== undefined ? { tty: options.tty } : {}),
    })
    for (const line of retiredSettingWarnings(config)) server.log.warn(line)
    if (tracing) {
      await tracing.instrument(server)
      server.log.info(
        {
          endpoint: options.spanExporter ? 'in-process' : config.tracing.endpoint,
          serviceName: config.tracing.serviceName,
        },
        'tracing: spans are exported over OTLP/HTTP',
      )
    }
    parts = await buildParts(config, database, server.log, options)
    await registerRoutes(server, {
      config,
      database,
      ...parts,
      policy: ingestPolicy(config),
      ...(options.now ? { now: options.now } : {}),
      jsonText: options.jsonText,
    })
    await startParts(parts)
    await release(held)
    await server.listen({ port: config.port, host: config.host }).catch((error: unknown) => {
      throw new StartupError(portProblem(config, error))
    })
    const address = server.server.address()
    const port = typeof address === 'object' && address ? address.port : config.port
    const host = config.host.includes(':') ? `[${config.host}]` : config.host
    const open = { server, database, parts, tracing }
    return {
      url: `http://${host}:${port}`,
      ...open,
      settle: () => open.parts.projector.catchUp(),
      async close() {
        await open.server.close()
        await stopParts(open.parts)
        if (ownsDatabase) await open.database.close()
        // Last, so the spans of the stop itself are sent.
        await open.tracing?.shutdown()
      },
    }
  } catch (error) {
    await release(held)
    await server?.close().catch(() => {})
    if (parts) await stopParts(parts).catch(() => {})
    if (ownsDatabase) await database?.close().catch(() => {})
    await tracing?.shutdown()
    throw error
  }
}

/**
 * Binds the port for a moment, so a busy one is found before anything else is opened. Port 0 (any
 * free port) cannot be busy. The socket is released just before the gateway listens.
 */
async function holdPort(config: Pick<Config, 'port' | 'host'>): Promise<Server | undefined> {
  // A worker of `serve --workers N` shares the port its primary holds: only the first could bind it alone.
  if (config.port === 0 || cluster.isWorker) return undefined
  // A health check or load balancer may connect while the gateway starts: turned away at once,
  // it would otherwise keep the probe's close (and the start) waiting for it to hang up.
  const probe = createServer((socket) => socket.destroy())
  probe.unref()
  try {
    probe.listen({ port: config.port, host: config.host, exclusive: true })
    await once(probe, 'listening')
    return probe
  } catch (error) {
    probe.close()
    throw new StartupError(portProblem(config, error))
  }
}

async function release(probe: Server | undefined): Promise<void> {
  if (!probe?.listening) return
  await new Promise<void>((resolve) => probe.close(() => resolve()))
}

function portProblem(config: Pick<Config, 'port' | 'host'>, error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code
  const at = `${config.host.includes(':') ? `[${config.host}]` : config.host}:${config.port}`
  switch (code) {
    case 'EADDRINUSE':
      return (
        `port ${config.port} on ${config.host} is already in use (EADDRINUSE): stop the process that holds it, or ` +
        `choose another port (PORT=${config.port + 1}, or "port" in the config file)`
      )
    case 'EACCES':
      return (
        `port ${config.port} on ${config.host} needs privileges this process lacks (EACCES): choose a port above ` +
        `1023`
      )
    case 'EADDRNOTAVAIL':
      return (
        `host ${config.host} is not an address of this machine (EADDRNOTAVAIL): set "host" (HOST) to one of its ` +
        `addresses, or 127.0.0.1`
      )
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `host "${config.host}" cannot be resolved (${code}): set "host" (HOST) to an address of this machine`
    default:
      return `cannot listen on ${at}: ${error instanceof Error ? error.message : String(error)}`
  }
}
