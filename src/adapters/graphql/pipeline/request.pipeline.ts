import { ApolloServer, type ApolloServerPlugin, type BaseContext, type GraphQLRequestListener } from '@apollo/server'
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled'
import type { FastifyBaseLogger } from 'fastify'
import { createSourceEventStream, type DocumentNode, type ExecutionArgs, type ExecutionResult, type FormattedExecutionResult, getOperationAST, type GraphQLSchema } from 'graphql'
import type { Config } from '../../../config/config.schema.js'
import type { Metrics } from '../../../work/metrics.registry.js'
import { graphqlMetricsPlugin } from '../../ops/graphql.metrics.js'
import { traceExtensions, tracingActive, withOperationSpan } from '../../ops/tracing.spans.js'
import type { GraphqlContext } from '../reads/request.context.js'
import { formatResultErrors, maskUnexpectedErrors } from '../graphql.errors.js'
import { jsonClientStatusPlugin, subscriptionsOverSocketPlugin } from './http.policy.js'
import { compiledExecution } from './jit.executor.js'
import { jsonTextExecution } from './json.rewrite.js'
import { stringifyWithJsonTexts, withJsonTextsParsed } from '../reads/json.parts.js'
import { queryLimitsChecker } from './query.limits.js'
import { buildGraphqlSchema } from './schema.build.js'
import { loadTrustedDocuments, trustedDocumentsPlugin } from './trusted.documents.js'
import { upstreamFreshnessPlugin } from '../reads/upstream.access.js'

/** What a caller sends, over any transport. */
export interface PipelineRequest {
  query?: string | undefined
  variables?: Record<string, unknown> | null | undefined
  operationName?: string | null | undefined
  extensions?: Record<string, unknown> | null | undefined
}

/**
 * What one request came to: an answer (a query's or a mutation's result, or the refusal of any
 * operation, every error formatted and masked), or, for a subscription over a socket, the source
 * of its events and the arguments each event's result is executed with.
 */
export type PipelineOutcome = { kind: 'answer'; result: FormattedExecutionResult; document?: DocumentNode | undefined } | { kind: 'stream'; source: AsyncIterator<unknown>; args: ExecutionArgs }

/** What the pipeline is built from. */
export interface PipelineOptions {
  config: Config
  log: FastifyBaseLogger
  metrics?: Metrics | undefined
  /**
   * A task page's pure-data parts written by PostgreSQL as JSON text (json.rewrite.ts). By
   * default where the runtime has `JSON.rawJSON` (Node 22 and later): Node 20 keeps the object
   * path it was measured with. Answers are the same bytes either way.
   */
  jsonText?: boolean | undefined
}

/** Whether the JSON text path is on by default: where `JSON.rawJSON` exists. */
export function jsonTextByDefault(): boolean {
  return typeof (JSON as { rawJSON?: unknown }).rawJSON === 'function'
}

/**
 * The one GraphQL request pipeline every transport runs: given what a caller sent and its context
 * (its key's scope, the transport), it decides and runs: trusted documents, parse and validation
 * (cached per document text by Apollo's document store, so a reconnect storm of one subscription
 * validates it once), the operation, subscriptions only over a socket, depth, alias and cost
 * limits, compiled execution, masking of unexpected errors (logged whole, answered with the code
 * only), operation metrics, the upstream freshness extension. HTTP (Apollo's fastify
 * integration) and graphql-ws (ws.server.ts) only translate to and from it.
 */
export class RequestPipeline {
  readonly apollo: ApolloServer<GraphqlContext>
  private readonly mask: ReturnType<typeof maskUnexpectedErrors>

  /** Builds the schema (every resolver, and the Federation subgraph's fields when configured) and the pipeline, started. */
  static async start(options: PipelineOptions & { schema?: GraphQLSchema | undefined }): Promise<RequestPipeline> {
    const built = options.schema ?? (await buildGraphqlSchema())
    // Loaded only when asked for: federation's libraries add a second or more to every start.
    const schema = options.config.graphql.federation ? (await import('./subgraph.schema.js')).buildSubgraph(built) : built
    const pipeline = new RequestPipeline(schema, options)
    await pipeline.apollo.start()
    return pipeline
  }

  private constructor(
    readonly schema: GraphQLSchema,
    options: PipelineOptions,
  ) {
    const { config, log } = options
    const trusted = loadTrustedDocuments(config.graphql.trustedDocuments, schema)
    this.mask = maskUnexpectedErrors((error) => log.error({ err: error }, 'graphql resolver failed'))
    const text = (options.jsonText ?? jsonTextByDefault()) ? jsonTextExecution(schema) : undefined
    // Over a socket graphql-ws serializes the answer itself: those requests take the object path.
    const jsonText = text ? { execution: text, applies: (context: unknown) => !(context as GraphqlContext).subscription } : undefined
    this.apollo = new ApolloServer<GraphqlContext>({
      gateway: withSocketSubscriptions(compiledExecution(schema, { jsonText }), schema),
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
      formatError: this.mask,
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
        graphqlMetricsPlugin<GraphqlContext>(options.metrics),
        subscriptionsOverSocketPlugin<GraphqlContext>(),
        queryLimitsPlugin<GraphqlContext>(config.graphql),
        trustedDocumentsPlugin<GraphqlContext>(trusted),
        documentPlugin(),
        traceIdPlugin(),
      ],
    })
  }

  stop(): Promise<void> {
    return this.apollo.stop()
  }

  /** Runs one request in `context` (made for its caller and transport) to its outcome. */
  async run(request: PipelineRequest, context: GraphqlContext): Promise<PipelineOutcome> {
    const response = await this.apollo.executeOperation(
      {
        ...(request.query ? { query: request.query } : {}),
        ...(request.variables ? { variables: request.variables } : {}),
        ...(request.operationName != null ? { operationName: request.operationName } : {}),
        ...(request.extensions ? { extensions: request.extensions } : {}),
      },
      { contextValue: context },
    )
    const stream = context.subscription?.stream
    if (stream) return { kind: 'stream', ...stream }
    // Subscriptions and incremental delivery are not served by Apollo: a single result always.
    const body = response.body as { kind: 'single'; singleResult: FormattedExecutionResult }
    // Whoever serializes this answer does it with JSON.stringify: no marker may reach it.
    return { kind: 'answer', result: withJsonTextsParsed(body.singleResult), document: context.subscription?.document }
  }

  /** An event's result, computed outside {@link run} (a subscription's), formatted and masked as run's are. */
  format(result: ExecutionResult): FormattedExecutionResult {
    return formatResultErrors(result, this.mask)
  }
}

/**
 * Apollo runs operations through its gateway interface (jit.executor.ts). A subscription that
 * came over a socket is not executed there: its source event stream is created with the
 * caller's context and left in the context's slot for the socket to read from; over HTTP the
 * pipeline has refused it before (http.policy.ts).
 */
function withSocketSubscriptions(gateway: ReturnType<typeof compiledExecution>, schema: GraphQLSchema): ReturnType<typeof compiledExecution> {
  return {
    ...gateway,
    async load(options) {
      const { executor } = await gateway.load(options)
      if (!executor) throw new Error('the compiled executor is missing')
      const run = async (request: Parameters<typeof executor>[0]): Promise<ExecutionResult> => {
        const { document, operationName } = request
        const context = request.context as GraphqlContext
        const slot = context.subscription
        if (slot && getOperationAST(document, operationName)?.operation === 'subscription') {
          const args: ExecutionArgs = { schema, document, operationName: operationName ?? null, variableValues: request.request.variables ?? {}, contextValue: context }
          const source = await createSourceEventStream(args)
          if (!(Symbol.asyncIterator in source)) return source
          slot.stream = { source: source[Symbol.asyncIterator](), args }
          return {}
        }
        return executor(request)
      }
      // Each operation in a span of its own, whichever transport brought it (tracing.spans.ts).
      const traced = (request: Parameters<typeof executor>[0]): Promise<ExecutionResult> => {
        const slot = (request.context as GraphqlContext).subscription
        const operation = {
          operationType: request.operation?.operation,
          operationName: request.operationName,
          document: request.source,
          transport: slot ? 'ws' : 'http',
          parent: slot?.parent,
          parentState: slot?.parentState,
        } as const
        return withOperationSpan(operation, (span) => {
          if (span && slot) slot.traceId = span.spanContext().traceId
          return run(request)
        })
      }
      return { executor: traced as typeof executor }
    },
  }
}

/** Leaves the resolved document in a socket request's slot: graphql-ws needs it to tell the operation's type. */
function documentPlugin(): ApolloServerPlugin<GraphqlContext> {
  const listener: GraphQLRequestListener<GraphqlContext> = {
    async didResolveOperation({ document, contextValue }) {
      if (contextValue.subscription) contextValue.subscription.document = document
    },
  }
  return { requestDidStart: async ({ contextValue }) => (contextValue.subscription ? listener : undefined) }
}

/**
 * Every error answered names the trace it happened in (`extensions.traceId`), when tracing is on:
 * an operator handed an error finds its trace. Over HTTP that is the request's trace; over a
 * socket, the operation's.
 */
function traceIdPlugin(): ApolloServerPlugin<GraphqlContext> {
  const listener: GraphQLRequestListener<GraphqlContext> = {
    async willSendResponse({ response, contextValue }) {
      if (response.body.kind !== 'single' || !response.body.singleResult.errors) return
      const traceId = contextValue.subscription?.traceId ?? traceExtensions().traceId
      if (!traceId) return
      response.body.singleResult.errors = response.body.singleResult.errors.map((error) => ({ ...error, extensions: { ...error.extensions, traceId } }))
    },
  }
  return { requestDidStart: async () => (tracingActive() ? listener : undefined) }
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
