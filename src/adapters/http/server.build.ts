import Fastify, { type FastifyInstance, LogController } from 'fastify'
import type { DestinationStream } from 'pino'
import type { Config } from '../../config/config.schema.js'
import { CallbackStore } from '../../work/callback.store.js'
import type { Database } from '../../storage/database.client.js'
import { codeForFrameworkError, errorAnswer, livegateError } from '../../model/error.catalogue.js'
import { graphqlPlugin } from '../graphql/graphql.plugin.js'
import { callbackRoute } from './callback.route.js'
import { RefusalLimiter } from './refusal.limiter.js'
import { loggerOptions } from '../ops/log.redaction.js'
import { createMetrics } from '../../work/metrics.registry.js'
import { opsPlugin } from '../ops/ops.plugin.js'
import { EventHub } from '../../work/event.hub.js'
import { GraphProjector } from '../../work/graph.projector.js'
import { CallbackSpool } from '../../work/spool/callback.spool.js'
import { spoolLocation } from '../../work/spool/spool.owner.js'
import { SpoolReplayer } from '../../work/spool/spool.replayer.js'
import { pollerFor } from '../../work/task-list.poller.js'
import { playgroundPlugin } from './playground.plugin.js'
import type { IngestPolicy } from '../../model/callback.verdict.js'

/** What the HTTP server is built from. */
export interface ServerDeps {
  config: Config
  database: Database
  /** The clock the ingest route judges timestamps by. */
  now?: () => Date
  /** Where log lines go (tests read them); standard output otherwise. */
  logStream?: DestinationStream
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

/** Builds the HTTP server: routes and wiring only, no business logic. */
export async function buildServer(deps: ServerDeps): Promise<FastifyInstance> {
  const { config, database } = deps
  // One registry per server: tests run several gateways in one process.
  const metrics = createMetrics()
  const app = Fastify({
    logger: loggerOptions(config, deps.logStream),
    // Every body outside the callback route is small; the callback route sets its own limit.
    bodyLimit: 1024 * 1024,
    return503OnClosing: true,
    // A kept callback logs one line of its own (id, type, deliveries), so the two request lines
    // fastify would add are left out there: at thousands of callbacks a second they tripled the
    // log and its cost. Every other route keeps them.
    logController: new LogController({ disableRequestLogging: (request: { url?: string }) => isCallbackUrl(request.url) }),
  })

  // Callbacks the database cannot take wait in a local spool, and the replayer puts them back.
  const spoolAt = spoolLocation(config)
  const spool = await CallbackSpool.open({ ...spoolAt, maxBytes: config.spool.maxBytes, onDepth: (depth) => metrics.spoolDepth.set(depth) })
  const store = new CallbackStore(database.db, { refusedMaxRows: config.ingest.refusedMaxRows })
  const replayer = new SpoolReplayer({ spool, store, log: app.log })
  app.addHook('onReady', async () => replayer.start())
  app.addHook('onClose', async () => {
    await replayer.stop()
    await spool.close()
  })
  await app.register(callbackRoute, {
    store,
    policy: ingestPolicy(config),
    bodyLimit: config.ingest.bodyLimit,
    spool,
    limiter: new RefusalLimiter({ perMinute: config.ingest.refusedPerMinute, trackedSources: config.ingest.refusedTrackedAddresses }),
    metrics,
    ...(deps.now ? { now: deps.now } : {}),
  })

  const poller = pollerFor(config, database.db, app.log, undefined, metrics)
  if (poller) {
    app.addHook('onReady', async () => poller.start())
    app.addHook('onClose', async () => poller.stop())
  }
  await app.register(playgroundPlugin)
  // The graph is a projection of the log, folded after each acknowledgement (graph.projector.ts).
  const projector = new GraphProjector({ database, log: app.log, metrics })
  projectors.set(app, projector)
  app.addHook('onReady', async () => projector.start())
  app.addHook('onClose', async () => projector.stop())
  const hub = new EventHub({ database, log: app.log, subscriberBuffer: config.realtime.subscriberBuffer })
  app.addHook('onReady', async () => hub.start())
  app.addHook('onClose', async () => hub.stop())
  await app.register(graphqlPlugin, { config, db: database.db, poller, hub, metrics })

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
