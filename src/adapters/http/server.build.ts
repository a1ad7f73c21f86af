import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify'
import type { DestinationStream } from 'pino'
import type { Config } from '../../config/config.schema.js'
import { CallbackStore } from '../../work/callback.store.js'
import type { Database } from '../../storage/database.client.js'
import { codeForFrameworkError, errorAnswer, livegateError } from '../../model/error.catalogue.js'
import { GRAPHQL_PATH, graphqlPlugin } from '../graphql/graphql.plugin.js'
import { callbackRoute } from './callback.route.js'
import { RefusalLimiter } from './refusal.limiter.js'
import { loggerOptions } from '../ops/log.redaction.js'
import { createMetrics } from '../../work/metrics.registry.js'
import { opsPlugin } from '../ops/ops.plugin.js'
import { EventHub } from '../../work/event.hub.js'
import { MetricsHistory } from '../../work/metrics.history.js'
import { GraphProjector } from '../../work/graph.projector.js'
import { CallbackSpool } from '../../work/spool/callback.spool.js'
import { spoolLocation } from '../../work/spool/spool.owner.js'
import { SpoolReplayer } from '../../work/spool/spool.replayer.js'
import { pollerFor } from '../../work/task-list.poller.js'
import { playgroundPlugin } from './playground.plugin.js'
import { dashboardPlugin } from './dashboard.plugin.js'
import type { IngestPolicy } from '../../model/callback.verdict.js'

/** What the HTTP server is built from. */
export interface ServerDeps {
  config: Config
  database: Database
  /** The clock the ingest route judges timestamps by. */
  now?: () => Date
  /** Where log lines go (tests read them); standard output otherwise. */
  logStream?: DestinationStream
  /** Standard output is a terminal: with `log.format: auto`, lines are written for reading. */
  tty?: boolean
}

/** The ingest policy, prepared once from the configuration. */
export function ingestPolicy(config: Config): IngestPolicy {
  return {
    services: new Map(config.services.map((service) => [service.serviceCode, service])),
    toleranceMs: config.ingest.timestampToleranceSeconds * 1000,
    headerPrefixes: config.ingest.signatureHeaderPrefixes.map((prefix) => prefix.toLowerCase()),
    refusedBodyLimit: config.ingest.refusedBodyLimit,
  }
}

function isCallbackUrl(url: string | undefined): boolean {
  return url !== undefined && (url === '/callbacks' || url.startsWith('/callbacks/') || url.startsWith('/callbacks?'))
}

const projectors = new WeakMap<FastifyInstance, GraphProjector>()

/** The graph projector of a server built by {@link buildServer}. */
export function projectorOf(app: FastifyInstance): GraphProjector {
  const projector = projectors.get(app)
  if (!projector) throw new Error('not a livegate server')
  return projector
}

// A healthy gateway's routine answers (probes, scrapes, queries, the playground's files) are
// logged at debug; what an operator may act on (a refusal, a client error, a failure) at info and
// above. One line per request, written once it is answered.
function requestLevel(status: number): 'debug' | 'info' | 'warn' {
  if (status >= 500) return 'warn'
  return status >= 400 ? 'info' : 'debug'
}

/** Builds the HTTP server: routes and wiring only, no business logic. */
export async function buildServer(deps: ServerDeps): Promise<FastifyInstance> {
  const { config, database } = deps
  // One registry per server: tests run several gateways in one process.
  const metrics = createMetrics()
  const app = Fastify({
    logger: loggerOptions(config, deps.logStream, deps.tty ?? false),
    // Every body outside the callback route is small; the callback route sets its own limit.
    bodyLimit: 1024 * 1024,
    return503OnClosing: true,
    // Fastify's two lines per request are replaced by one, below, at a level by outcome.
    logController: new LogController({ disableRequestLogging: true }),
  })
  app.addHook('onResponse', async (request, reply) => {
    // A kept callback logs one line of its own (id, type, deliveries): at thousands of callbacks
    // a second a request line would double the log and its cost.
    if (isCallbackUrl(request.url)) return
    const level = requestLevel(reply.statusCode)
    if (!(app.log as unknown as { isLevelEnabled(level: string): boolean }).isLevelEnabled(level)) return
    request.log[level]({ method: request.method, url: request.url, statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request answered')
  })
  // A browser pointed at the server, or at the endpoint with a trailing slash, finds the playground.
  const toPlayground = async (request: FastifyRequest, reply: FastifyReply) => {
    const query = request.url.indexOf('?')
    return reply.redirect(`${GRAPHQL_PATH}${query >= 0 ? request.url.slice(query) : ''}`, 302)
  }
  app.get('/', toPlayground)
  app.get(`${GRAPHQL_PATH}/`, toPlayground)

  // Callbacks the database cannot take wait in a local spool, and the replayer puts them back.
  const spoolAt = spoolLocation(config)
  const spool = await CallbackSpool.open({ ...spoolAt, maxBytes: config.spool.maxBytes, onDepth: (depth) => metrics.spoolDepth.set(depth) })
  const store = new CallbackStore(database.db, {
    refusedMaxRows: config.ingest.refusedMaxRows,
    onDoorbellError: (error) => app.log.warn({ err: error }, 'the log doorbell could not be rung; readers will find the callbacks at their next look'),
  })
  const replayer = new SpoolReplayer({ spool, store, log: app.log })
  app.addHook('onReady', async () => replayer.start())
  app.addHook('onClose', async () => {
    await replayer.stop()
    await spool.close()
  })
  // Audience and health over time: the poller samples each answer (work/metrics.history.ts).
  const history = new MetricsHistory({ config, database, log: app.log, registry: metrics.registry, now: deps.now })
  app.addHook('onReady', async () => history.start())
  app.addHook('onClose', async () => history.stop())
  await app.register(callbackRoute, {
    store,
    policy: ingestPolicy(config),
    bodyLimit: config.ingest.bodyLimit,
    spool,
    limiter: new RefusalLimiter({ perMinute: config.ingest.refusedPerMinute, trackedSources: config.ingest.refusedTrackedAddresses }),
    metrics,
    delays: history.metrics.callbackDelay,
    ...(deps.now ? { now: deps.now } : {}),
  })

  const poller = pollerFor(config, database.db, app.log, undefined, metrics, { sampler: history.sampler, now: deps.now })
  if (poller) {
    app.addHook('onReady', async () => poller.start())
    app.addHook('onClose', async () => poller.stop())
  }
  await app.register(playgroundPlugin)
  await app.register(dashboardPlugin)
  // The graph is a projection of the log, folded after each acknowledgement (graph.projector.ts).
  const projector = new GraphProjector({ database, log: app.log, metrics })
  projectors.set(app, projector)
  app.addHook('onReady', async () => projector.start())
  app.addHook('onClose', async () => projector.stop())
  const hub = new EventHub({ database, log: app.log, subscriberBuffer: config.realtime.subscriberBuffer })
  app.addHook('onReady', async () => hub.start())
  app.addHook('onClose', async () => hub.stop())
  await app.register(graphqlPlugin, { config, db: database.db, poller, hub, history, metrics })

  await app.register(opsPlugin, { config, db: database.db, metrics, hub, poller, spool })

  app.setNotFoundHandler(async (_request, reply) => {
    const answer = errorAnswer(livegateError('NOT_FOUND'))
    return reply.code(answer.status).send(answer.body)
  })
  app.setErrorHandler(async (error, request, reply) => {
    const known = codeForFrameworkError(error)
    if (known === 'INTERNAL') request.log.error({ err: error }, 'request failed')
    const answer = errorAnswer(livegateError(known))
    return reply.code(answer.status).send(answer.body)
  })
  return app
}
