import { ApolloServer, type ApolloServerPlugin, type BaseContext, type GraphQLRequestListener } from '@apollo/server'
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled'
import fastifyApollo from '@as-integrations/fastify'
import type { FastifyPluginAsync } from 'fastify'
import type { GraphQLSchema } from 'graphql'
import type { Config } from '../../config/config.schema.js'
import type { Db } from '../../storage/database.client.js'
import { graphqlMetricsPlugin } from '../ops/graphql.metrics.js'
import type { Metrics } from '../../work/metrics.registry.js'
import type { EventHub } from '../../work/event.hub.js'
import type { MetricsHistory } from '../../work/metrics.history.js'
import { attachWebsocket } from '../websocket/ws.server.js'
import type { TaskListPoller } from '../../work/task-list.poller.js'
import { authenticate, type Scope, unauthenticated } from './auth.scope.js'
import { type GraphqlContext, createContext } from './context.js'
import type { WebhookService } from '../../work/webhook.service.js'
import { graphqlErrorBody, maskUnexpectedErrors } from './graphql.errors.js'
import { buildGraphqlSchema } from './schema.build.js'
import { loadTrustedDocuments, trustedDocumentFor, trustedDocumentsPlugin } from './trusted.documents.js'
import { compiledExecution } from './jit.executor.js'
import { checkQueryLimits, queryLimitsChecker } from './query.limits.js'
import { upstreamFreshnessPlugin } from './upstream.access.js'
import { csrfHook, jsonClientStatusPlugin, subscriptionsOverSocketPlugin } from './http.policy.js'

/** What the GraphQL endpoint is built from. */
export interface GraphqlPluginOptions {
  config: Config
  db: Db
  poller?: TaskListPoller | undefined
  hub?: EventHub | undefined
  history?: MetricsHistory | undefined
  /** Where operation latency is measured (`livegate_graphql_seconds`). */
  metrics?: Metrics | undefined
  /** Webhook endpoints and their deliveries. */
  webhooks?: WebhookService | undefined
  /** A schema already built (tests, or a server built twice); built from every resolver otherwise. */
  schema?: GraphQLSchema
}

/** Where the endpoint answers. */
export const GRAPHQL_PATH = '/graphql'

/**
 * The GraphQL endpoint: Apollo Server at `/graphql`, GET and POST, on the gateway's fastify
 * server. Apollo is stopped when fastify closes.
 */
export const graphqlPlugin: FastifyPluginAsync<GraphqlPluginOptions> = async (app, options) => {
  const { config, db, poller, hub, history, webhooks } = options
  const built = options.schema ?? (await buildGraphqlSchema())
  // Loaded only when asked for: federation's libraries add a second or more to every start.
  const schema = config.graphql.federation ? (await import('./subgraph.schema.js')).buildSubgraph(built) : built
  const trusted = loadTrustedDocuments(config.graphql.trustedDocuments, schema)
  const apollo = new ApolloServer<GraphqlContext>({
    // Operations a client sends again are compiled with graphql-jit (jit.executor.ts).
    gateway: compiledExecution(schema),
    includeStacktraceInErrorResponses: false,
    // Apollo indents answers by default: a tenth more bytes and CPU on a page, for no reader.
    stringifyResult: JSON.stringify,
    // The schema is a published contract (schema/schema.graphql), and the playground reads it.
    introspection: true,
    // Our own CSRF policy (http.policy.ts) runs first, as a fastify hook: Apollo's would refuse the
    // GET a stock client sends (urql's, which accepts application/graphql-response+json).
    csrfPrevention: false,
    // The CLI owns the process signals and closes fastify, which stops Apollo.
    stopOnTerminationSignals: false,
    logger: app.log,
    formatError: maskUnexpectedErrors((error) => app.log.error({ err: error }, 'graphql resolver failed')),
    plugins: [
      // The default landing page loads a sandbox from a CDN; the playground will be served offline.
      ApolloServerPluginLandingPageDisabled(),
      // Apollo would otherwise report to its cloud when APOLLO_KEY and friends are in the environment.
      ApolloServerPluginUsageReportingDisabled(),
      ApolloServerPluginSchemaReportingDisabled(),
      // Its per-field hook wraps every resolver of the schema, and no type carries a cache hint:
      // every answer was \`no-store\`, and still is, without the per-field cost.
      ApolloServerPluginCacheControlDisabled(),
      noStorePlugin<GraphqlContext>(),
      jsonClientStatusPlugin<GraphqlContext>(),
      upstreamFreshnessPlugin<GraphqlContext>(),
      graphqlMetricsPlugin<GraphqlContext>(options.metrics),
      subscriptionsOverSocketPlugin<GraphqlContext>(),
      queryLimitsPlugin<GraphqlContext>(config.graphql),
      trustedDocumentsPlugin<GraphqlContext>(trusted),
    ],
  })
  await apollo.start()
  app.addHook('onClose', async () => {
    await apollo.stop()
  })

  // Errors fastify raises before Apollo runs (unreadable JSON, an unsupported body type) are
  // answered in the GraphQL response shape, as a GraphQL client expects on this path.
  app.setErrorHandler(async (error, request, reply) => {
    const { statusCode, message: reason } = error as { statusCode?: unknown; message?: unknown }
    const status = typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500 ? statusCode : 500
    if (status === 500) request.log.error({ err: error }, 'graphql request failed')
    const message = status === 500 ? 'Internal error.' : typeof reason === 'string' ? reason : 'Bad request.'
        return reply
      .code(status)
      .type('application/json; charset=utf-8')
      .send(graphqlErrorBody(status === 500 ? 'INTERNAL_SERVER_ERROR' : 'BAD_REQUEST', message))
  })

  app.addHook('onRequest', csrfHook(GRAPHQL_PATH))
  await app.register(fastifyApollo(apollo), {
    path: GRAPHQL_PATH,
    method: ['GET', 'POST'],
    context: async (request) => {
      const scope = authenticate(request.headers.authorization, config.apiKeys)
      if (!scope) throw unauthenticated()
      return createContext({ db, config, poller, hub, history, webhooks }, scope)
    },
  })
  // Subscriptions: graphql-ws on the same path.
  attachWebsocket(app, {
    schema,
    checkLimits: (args) => checkQueryLimits({ ...args, limits: config.graphql }),
    path: GRAPHQL_PATH,
    maxPayload: 1024 * 1024,
    authenticate: (params) => {
      const authorization = params?.authorization ?? params?.Authorization
      return authenticate(typeof authorization === 'string' ? authorization : undefined, config.apiKeys)
    },
    context: (scope, closeSocket) => createContext({ db, config, poller, hub, history, webhooks }, scope as Scope, closeSocket),
    documentFor: (scope, payload) => {
      const found = trustedDocumentFor(scope as Scope, payload, trusted)
      return found && 'document' in found ? found.document : found
    },
    subscriberBuffer: config.realtime.subscriberBuffer,
    registry: options.metrics?.registry,
  })

  // The path exists, so other methods get a 405 naming the allowed ones, not a 404.
  app.route({
    method: ['PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: GRAPHQL_PATH,
    handler: async (_request, reply) =>
      reply
        .code(405)
        .header('allow', 'GET, POST')
        .type('application/json; charset=utf-8')
        .send(graphqlErrorBody('BAD_REQUEST', 'Send GraphQL requests by GET or POST.')),
  })
}

/** Refuses an operation over the configured depth, aliases or cost before it runs. */
function queryLimitsPlugin<C extends BaseContext>(limits: Config['graphql']): ApolloServerPlugin<C> {
  const check = queryLimitsChecker(limits)
  const listener = {
    async didResolveOperation({ schema, document, operationName, request }: Parameters<NonNullable<GraphQLRequestListener<C>['didResolveOperation']>>[0]) {
      const refusal = check({ schema, document, operationName, variables: request.variables })
      if (refusal) throw refusal
    },
  }
  return { requestDidStart: async () => listener }
}

/** Answers are live data, possibly scoped to an API key: no cache may keep them. */
function noStorePlugin<C extends BaseContext>(): ApolloServerPlugin<C> {
  const listener = {
    async willSendResponse({ response }: Parameters<NonNullable<GraphQLRequestListener<C>['willSendResponse']>>[0]) {
      if (!response.http.headers.has('cache-control')) response.http.headers.set('cache-control', 'no-store')
    },
  }
  return { requestDidStart: async () => listener }
}
