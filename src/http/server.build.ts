import Fastify, { type FastifyInstance } from 'fastify'
import type { Config } from '../config/config.schema.js'
import { CallbackStore } from '../db/callback.store.js'
import type { Database } from '../db/database.client.js'
import { codeForFrameworkError, errorAnswer, livegateError } from '../error.catalogue.js'
import { graphqlPlugin } from '../graphql/graphql.plugin.js'
import { callbackRoute } from '../ingest/callback.route.js'
import { EventHub } from '../realtime/event.hub.js'
import { pollerFor } from '../upstream/task-list.poller.js'
import type { IngestPolicy } from '../ingest/callback.verdict.js'

/** What the HTTP server is built from. */
export interface ServerDeps {
  config: Config
  database: Database
  /** The clock the ingest route judges timestamps by. */
  now?: () => Date
}

// Secrets never reach a log line: request headers are not logged by default, and these paths
// are censored should a later change log them.
const REDACTED = ['req.headers.authorization', ...['svc', 'xvs'].map((p) => `req.headers["${p}-signature"]`)]

/** The ingest policy, prepared once from the configuration. */
export function ingestPolicy(config: Config): IngestPolicy {
  return {
    services: new Map(config.services.map((service) => [service.serviceCode, service])),
    toleranceMs: config.ingest.timestampToleranceSeconds * 1000,
    headerPrefixes: config.ingest.signatureHeaderPrefixes.map((prefix) => prefix.toLowerCase()),
    refusedBodyLimit: config.ingest.refusedBodyLimit,
  }
}

/** Builds the HTTP server: routes and wiring only, no business logic. */
export async function buildServer(deps: ServerDeps): Promise<FastifyInstance> {
  const { config, database } = deps
  const app = Fastify({
    logger: { level: config.log.level, redact: REDACTED },
    // Every body outside the callback route is small; the callback route sets its own limit.
    bodyLimit: 1024 * 1024,
    return503OnClosing: true,
  })

  await app.register(callbackRoute, {
    store: new CallbackStore(database.db),
    policy: ingestPolicy(config),
    bodyLimit: config.ingest.bodyLimit,
    ...(deps.now ? { now: deps.now } : {}),
  })

  const poller = pollerFor(config, database.db, app.log)
  if (poller) {
    app.addHook('onReady', async () => poller.start())
    app.addHook('onClose', async () => poller.stop())
  }
  const hub = new EventHub({ database, log: app.log, subscriberBuffer: config.realtime.subscriberBuffer })
  app.addHook('onReady', async () => hub.start())
  app.addHook('onClose', async () => hub.stop())
  await app.register(graphqlPlugin, { config, db: database.db, poller, hub })

  app.get('/healthz', async () => ({ ok: true }))

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
