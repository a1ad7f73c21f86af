import { ApolloServer, type ApolloServerPlugin, type GraphQLRequestListener } from '@apollo/server'
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled'
import type { FastifyBaseLogger } from 'fastify'
import { graphqlMetricsPlugin } from '../../ops/graphql.metrics.js'
import { stringifyWithJsonTexts } from '../reads/json.parts.js'
import type { GraphqlContext } from '../reads/request.context.js'
import { upstreamFreshnessPlugin } from '../reads/upstream.access.js'
import { noStorePlugin, queryLimitsPlugin, traceIdPlugin } from './answer.plugins.js'
import { jsonClientStatusPlugin, subscriptionsOverSocketPlugin } from './http.policy.js'
import type { RequestPipeline } from '../pipeline/request.pipeline.js'
import { trustedDocumentsPlugin } from '../pipeline/trusted.documents.js'

/**
 * Apollo's HTTP route of the request core: GraphQL over HTTP as Apollo reads and answers it (GET
 * and POST, batching, automatic persisted queries, content negotiation, statuses), every rule of
 * the core held by the core's own parts (its trusted documents, limits checker, metric labels,
 * masking and compiled executor, run as Apollo's gateway). Each query it answers without an error
 * is told to the core's document cache, which answers it again without Apollo (the prepared path).
 */
export function apolloRoute(pipeline: RequestPipeline, log: FastifyBaseLogger): ApolloServer<GraphqlContext> {
  return new ApolloServer<GraphqlContext>({
    // Apollo's supported way to run operations with an executor of one's own (jit.executor.ts).
    gateway: pipeline.gateway,
    includeStacktraceInErrorResponses: false,
    // Apollo indents answers by default: a tenth more bytes and CPU on a page, for no reader.
    // The JSON texts of a task page's parts are written in where their markers are.
    stringifyResult: stringifyWithJsonTexts,
    // The schema is a published contract (schema/schema.graphql), and the playground reads it.
    introspection: true,
    // Our own CSRF policy (http.policy.ts) runs first, as a fastify hook: Apollo's would refuse the
    // GET a stock client sends (urql's, which accepts application/graphql-response+json).
    csrfPrevention: false,
    // The CLI owns the process signals and closes fastify, which stops Apollo.
    stopOnTerminationSignals: false,
    logger: log,
    formatError: pipeline.mask,
    plugins: [
      // The default landing page loads a sandbox from a CDN; the playground is served offline.
      ApolloServerPluginLandingPageDisabled(),
      // Apollo would otherwise report to its cloud when APOLLO_KEY and friends are in the environment.
      ApolloServerPluginUsageReportingDisabled(),
      ApolloServerPluginSchemaReportingDisabled(),
      // Its per-field hook wraps every resolver of the schema, and no type carries a cache hint.
      ApolloServerPluginCacheControlDisabled(),
      noStorePlugin<GraphqlContext>(),
      jsonClientStatusPlugin<GraphqlContext>(),
      upstreamFreshnessPlugin<GraphqlContext>(),
      graphqlMetricsPlugin<GraphqlContext>(pipeline.metrics, { labels: pipeline.labels }),
      subscriptionsOverSocketPlugin<GraphqlContext>(),
      queryLimitsPlugin<GraphqlContext>(pipeline.checkLimits),
      trustedDocumentsPlugin<GraphqlContext>(pipeline.trusted),
      traceIdPlugin(),
      answeredPlugin(pipeline),
    ],
  })
}

/** Tells the core's document cache each query Apollo answered over HTTP without an error (see `answerKnown`). */
function answeredPlugin(pipeline: RequestPipeline): ApolloServerPlugin<GraphqlContext> {
  const listener: GraphQLRequestListener<GraphqlContext> = {
    willSendResponse: async ({ request, source, document, operation, response, contextValue }) => {
      if (contextValue.scope.trustedOnly || !source || !document || operation?.operation !== 'query') return
      if (response.body.kind !== 'single' || response.body.singleResult.errors) return
      if ((response.http.status ?? 200) !== 200) return
      pipeline.documents.answered(source, request.operationName ?? null, document)
    },
  }
  return { requestDidStart: async () => listener }
}
