import cluster from 'node:cluster'
import { once } from 'node:events'
import { createServer, type Server } from 'node:net'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import type { DestinationStream } from 'pino'
import type { SpanExporter } from '@opentelemetry/sdk-trace-base'
import type { Config } from './config/config.schema.js'
import { ConfigError } from './config/config.load.js'
import { StartupError } from './config/startup.error.js'
import { retiredSettingWarnings } from './config/retired.settings.js'
import { ingestPolicy } from './model/callback.verdict.js'
import { type Database, openDatabase } from './storage/database.client.js'
import { backfillLegacyValues } from './storage/legacy.backfill.js'
import { ActionRunner } from './work/outbound/action.runner.js'
import { ActionClient } from './work/outbound/action.client.js'
import { CloudClient } from './work/cloud.client.js'
import { CallbackStore } from './work/ingest/callback.store.js'
import { EventHub } from './work/realtime/event.hub.js'
import { GraphProjector } from './work/graph/graph.projector.js'
import { AudienceHistory } from './work/graph/audience.history.js'
import { createMetrics, type Metrics } from './work/metrics.registry.js'
import { RetentionJob, retentionSettings } from './work/retention.job.js'
import { ChannelListener } from './work/channel.listener.js'
import { WebhookService } from './work/outbound/webhook.service.js'
import { IncidentWatch } from './work/alerts/incident.watch.js'
import { CallbackSpool } from './work/ingest/spool/callback.spool.js'
import { spoolLocation } from './work/ingest/spool/spool.owner.js'
import { SpoolReplayer } from './work/ingest/spool/spool.replayer.js'
import { pollerFor, type TaskListPoller } from './work/graph/task-list.poller.js'
import { type ArchivePoller, archivePollerFor } from './work/graph/archive.poller.js'
import { RecordingMissingWatch } from './work/graph/recording-missing.watch.js'
import { unsafeBinding } from './adapters/graphql/auth.scope.js'
import { createHttpServer, registerRoutes } from './adapters/http/server.build.js'
import type { Tracing } from './adapters/ops/tracing.sdk.js'
import { webhookShapes } from './adapters/graphql/reads/webhook.shapes.js'

/**
 * The assembly of a gateway process: the one place that builds the database, the units of work
 * and the adapters, and that owns the order in which they start and stop. Adapters are handed the
 * parts they serve and only register routes; nothing reaches a part back through a lookup.
 *
 * Start: port check, database (migrated), HTTP server and its logger, then the parts (channel listener, spool,
 * replayer, store, poller, projector, event hub, webhooks, retention), the routes, and, once every part has started,
 * the listening socket. Stop: the HTTP server first (no new request; sockets closed; the requests under way
 * answered), then the parts in the reverse order of their start, then the database the gateway opened.
 */

/** The units of work of a running gateway. */
export interface GatewayParts {
  metrics: Metrics
  channels: ChannelListener
  /** The one signed client of the cloud: task_list, the actions and the archive call through it. */
  cloud: CloudClient
  spool: CallbackSpool
  store: CallbackStore
  replayer: SpoolReplayer
  poller: TaskListPoller | undefined
  /** Asks each code's archive (`list_files`) into the catalogue of recordings. */
  archive: ArchivePoller | undefined
  /** Tells a task ended with `live_only` 0 and no recording after the grace (`recording.missing`). */
  missing: RecordingMissingWatch
  projector: GraphProjector
  hub: EventHub
  /** Audience and health over time: the poller samples each answer into it. */
  history: AudienceHistory
  retention: RetentionJob
  /** Acts on the cloud (stopTask, sendMessage), audited. */
  actions: ActionRunner
  /** Signed webhooks of the log and of what is derived: the outbox's enqueuer and delivery workers. */
  webhooks: WebhookService
  /** Alert rules: opens, resolves and tells incidents. */
  incidents: IncidentWatch
}

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
    await startParts(parts, server.log)
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

/** Builds the units of work; none runs until {@link startParts}. */
async function buildParts(
  config: Config,
  database: Database,
  log: FastifyBaseLogger,
  options: StartOptions,
): Promise<GatewayParts> {
  // One registry per gateway: tests run several gateways in one process.
  const metrics = createMetrics()
  // Callbacks the database cannot take wait in a local spool, and the replayer puts them back.
  const spool = await CallbackSpool.open({
    ...spoolLocation(config),
    maxBytes: config.spool.maxBytes,
    onDepth: (depth) => metrics.spoolDepth.set(depth),
  })
  const store = new CallbackStore(database.db, {
    refusedMaxRows: config.ingest.refusedMaxRows,
    onDoorbellError: (error) =>
      log.warn(
        { err: error },
        'the log doorbell could not be rung; readers will find the callbacks at their next look',
      ),
  })
  const channels = new ChannelListener({ database, log })
  const history = new AudienceHistory({ config, database, channels, log, registry: metrics.registry })
  const headerPrefix = config.ingest.signatureHeaderPrefixes[0]
  const cloud = new CloudClient({ services: config.services, headerPrefix, metrics })
  const actionClient = new ActionClient({
    services: config.services,
    timeoutMs: config.upstream.actionTimeoutMs,
    cloud,
  })
  return {
    metrics,
    channels,
    cloud,
    spool,
    store,
    replayer: new SpoolReplayer({ spool, store, log }),
    history,
    poller: pollerFor(config, database.db, log, undefined, metrics, {
      sampler: history.sampler,
      ...(options.now ? { now: options.now } : {}),
      cloud,
    }),
    archive: archivePollerFor(config, database.db, cloud, log),
    missing: new RecordingMissingWatch({ config, database, log, now: options.now }),
    // The graph is a projection of the log, folded after each acknowledgement (graph.projector.ts).
    // The starts and ends a pass makes are kept for the webhooks only when some endpoint may want them.
    projector: new GraphProjector({
      database,
      channels,
      log,
      metrics,
      derivedEvents: config.webhooks.endpoints.length > 0,
    }),
    hub: new EventHub({ database, channels, log, subscriberBuffer: config.realtime.subscriberBuffer }),
    retention: new RetentionJob({
      ...retentionSettings(config),
      db: database.db,
      log,
      now: options.now,
      history: history.polled ? history.retention : undefined,
    }),
    actions: new ActionRunner({ db: database.db, config, log, metrics, client: actionClient }),
    // Bodies are shaped as GraphQL shapes its types (adapters), handed down to the work floor.
    webhooks: new WebhookService({
      config,
      database,
      channels,
      log,
      registry: metrics.registry,
      shapes: webhookShapes,
    }),
    incidents: new IncidentWatch({ config, database, channels, log, registry: metrics.registry, now: options.now }),
  }
}

async function startParts(parts: GatewayParts, log: FastifyBaseLogger): Promise<void> {
  await parts.channels.start()
  await parts.replayer.start()
  parts.history.start()
  await parts.poller?.start()
  parts.archive?.start()
  parts.missing.start()
  await parts.projector.start()
  await parts.hub.start()
  await parts.actions.start()
  await parts.webhooks.start()
  await parts.incidents.start()
  parts.retention.start()
  if (!parts.retention.enabled) log.debug('retention: no scheduled prune (the intervals or the retentions are 0)')
}

/** Stops the parts in the reverse order of their start; the spool is closed last. */
async function stopParts(parts: GatewayParts): Promise<void> {
  parts.actions.close()
  await parts.retention.stop()
  await parts.incidents.stop()
  await parts.webhooks.stop()
  await parts.hub.stop()
  await parts.projector.stop()
  await parts.poller?.stop()
  await parts.archive?.stop()
  await parts.missing.stop()
  await parts.history.stop()
  await parts.replayer.stop()
  await parts.channels.stop()
  parts.cloud.close()
  await parts.spool.close()
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
