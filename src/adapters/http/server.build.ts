import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify'
import type { DestinationStream } from 'pino'
import type { Config } from '../../config/config.schema.js'
import type { CallbackStore } from '../../work/ingest/callback.store.js'
import type { Database } from '../../storage/database.client.js'
import { codeForFrameworkError, errorAnswer, livegateError } from '../../model/error.catalogue.js'
import { GRAPHQL_PATH, graphqlPlugin } from '../graphql/http/graphql.plugin.js'
import { createContext } from '../graphql/reads/request.context.js'
import { RequestPipeline } from '../graphql/pipeline/request.pipeline.js'
import { attachWebsocket } from '../websocket/ws.server.js'
import { callbackRoute } from './callback.route.js'
import { RefusalLimiter } from './refusal.limiter.js'
import { loggerOptions } from '../ops/log.redaction.js'
import type { Metrics } from '../../work/metrics.registry.js'
import { opsPlugin } from '../ops/ops.plugin.js'
import type { ReplicaRouter } from '../../work/replica.router.js'
import type { RealtimeEngine } from '../../work/realtime/realtime.engine.js'
import type { CallbackSpool } from '../../work/ingest/spool/callback.spool.js'
import type { TaskListPoller } from '../../work/graph/task-list.poller.js'
import type { AudienceHistory } from '../../work/graph/audience.history.js'
import type { ActionRunner } from '../../work/outbound/action.runner.js'
import type { WebhookService } from '../../work/outbound/webhook.service.js'
import { playgroundPlugin } from './playground.plugin.js'
import { dashboardPlugin } from './dashboard.plugin.js'
import type { IngestPolicy } from '../../model/callback.verdict.js'

/** How the HTTP server logs. */
export interface ServerLogging {
  config: Config
  /** Where log lines go (tests read them); standard output otherwise. */
  logStream?: DestinationStream
  /** Standard output is a terminal: with `log.format: auto`, lines are written for reading. */
  tty?: boolean
}

/** What the routes are given: the parts the assembly (src/gateway.assembly.ts) built. */
export interface ServerParts {
  config: Config
  database: Database
  store: CallbackStore
  spool: CallbackSpool
  policy: IngestPolicy
  poller: TaskListPoller | undefined
  hub: RealtimeEngine
  history: AudienceHistory
  metrics: Metrics
  /** Acts on the cloud (`stopTask`, `sendMessage`). */
  actions?: ActionRunner | undefined
  /** Webhook endpoints and their deliveries, for GraphQL. */
  webhooks?: WebhookService | undefined
  /** Routes queries to streaming replicas (`database.readUrls`). */
  reads?: ReplicaRouter | undefined
  /** The clock the ingest route judges timestamps by. */
  now?: () => Date
  /** A task page's pure-data parts as JSON text (request.pipeline.ts); by default where `JSON.rawJSON` exists. */
  jsonText?: boolean | undefined
}

function isCallbackUrl(url: string | undefined): boolean {
  return url !== undefined && (url === '/callbacks' || url.startsWith('/callbacks/') || url.startsWith('/callbacks?'))
}

// A healthy gateway's routine answers (probes, scrapes, queries, the playground's files) are
// logged at debug; what an operator may act on (a refusal, a client error, a failure) at info and
// above. One line per request, written once it is answered.
function requestLevel(status: number): 'debug' | 'info' | 'warn' {
  if (status >= 500) return 'warn'
  return status >= 400 ? 'info' : 'debug'
}

/**
 * The HTTP server, with no route yet: its logger (which the assembly hands to the parts), one log
 * line per answered request, and the answers to an unknown path and to a fault.
 */
export function createHttpServer(logging: ServerLogging): FastifyInstance {
  const app = Fastify({
    logger: loggerOptions(logging.config, logging.logStream, logging.tty ?? false),
    // Every body outside the callback route is small; the callback route sets its own limit.
    bodyLimit: 1024 * 1024,
    return503OnClosing: true,
    // Fastify gives each plugin 10 s to start; on a machine at a load of 20 and more a plugin that
    // only reads two files took longer, and the gateway refused to start. A start that is stuck
    // rather than slow still fails, after two minutes.
    pluginTimeout: 120_000,
    // Fastify's two lines per request are replaced by one, below, at a level by outcome.
    logController: new LogController({ disableRequestLogging: true }),
  })
  app.addHook('onResponse', async (request, reply) => {
    // A kept callback logs one line of its own (id, type, deliveries): at thousands of callbacks
    // a second a request line would double the log and its cost.
    if (isCallbackUrl(request.url)) return
    const level = requestLevel(reply.statusCode)
    if (!(app.log as unknown as { isLevelEnabled(level: string): boolean }).isLevelEnabled(level)) return
    request.log[level](
      { method: request.method, url: request.url, statusCode: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      'request answered',
    )
  })
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

/** Registers every route on the server: routes and wiring only, no business logic. */
export async function registerRoutes(app: FastifyInstance, parts: ServerParts): Promise<void> {
  const { config, database, store, spool, poller, hub, history, metrics } = parts
  // A browser pointed at the server, or at the endpoint with a trailing slash, finds the playground.
  const toPlayground = async (request: FastifyRequest, reply: FastifyReply) => {
    const query = request.url.indexOf('?')
    return reply.redirect(`${GRAPHQL_PATH}${query >= 0 ? request.url.slice(query) : ''}`, 302)
  }
  app.get('/', toPlayground)
  app.get(`${GRAPHQL_PATH}/`, toPlayground)

  await app.register(callbackRoute, {
    store,
    policy: parts.policy,
    bodyLimit: config.ingest.bodyLimit,
    spool,
    limiter: new RefusalLimiter({
      perMinute: config.ingest.refusedPerMinute,
      trackedSources: config.ingest.refusedTrackedAddresses,
    }),
    metrics,
    delays: history.metrics.callbackDelay,
    ...(parts.now ? { now: parts.now } : {}),
  })
  await app.register(playgroundPlugin)
  await app.register(dashboardPlugin, { oidc: config.auth.oidc })
  // One request core, two transports that only translate: HTTP and graphql-ws on one path.
  const pipeline = await RequestPipeline.start({ config, log: app.log, metrics, jsonText: parts.jsonText })
  const deps = {
    db: database.db,
    config,
    poller,
    hub,
    history,
    actions: parts.actions,
    webhooks: parts.webhooks,
    reads: parts.reads,
  }
  await app.register(graphqlPlugin, { config, pipeline, contextFor: (scope) => createContext(deps, scope) })
  attachWebsocket(app, {
    pipeline,
    path: GRAPHQL_PATH,
    maxPayload: 1024 * 1024,
    context: (scope, trace) => createContext(deps, scope, 'ws', trace),
    subscriberBuffer: config.realtime.subscriberBuffer,
    keepAliveMs: config.realtime.keepAliveMs,
    registry: metrics.registry,
  })
  const replicas = parts.reads?.routing ? () => parts.reads?.states() ?? [] : undefined
  await app.register(opsPlugin, { config, db: database.db, metrics, hub, poller, spool, replicas })
}
