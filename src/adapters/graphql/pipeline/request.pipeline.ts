import { ApolloServer, type ApolloServerPlugin, type BaseContext, type GraphQLRequestListener } from '@apollo/server'
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginSchemaReportingDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled'
import { trace } from '@opentelemetry/api'
import type { FastifyBaseLogger } from 'fastify'
import {
  createSourceEventStream,
  type DocumentNode,
  type ExecutionResult,
  type FormattedExecutionResult,
  GraphQLError,
  type GraphQLSchema,
  Kind,
} from 'graphql'
import type { Config } from '../../../config/config.schema.js'
import type { Metrics } from '../../../work/metrics.registry.js'
import { graphqlMetricsPlugin } from '../../ops/graphql.metrics.js'
import {
  describeOperationSpan,
  type OperationTrace,
  traceExtensions,
  tracingActive,
  withOperationSpan,
} from '../../ops/operation.spans.js'
import type { GraphqlContext } from '../reads/request.context.js'
import { formatResultErrors, maskUnexpectedErrors } from '../graphql.errors.js'
import { jsonClientStatusPlugin, subscriptionsOverSocketPlugin } from './http.policy.js'
import { compiledEvents, compiledExecution, type EventExecution, type ExecutorRequest } from './jit.executor.js'
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

/** A subscription started over a socket: its source of events and how each event becomes its result. */
export interface SubscriptionStream {
  source: AsyncIterator<unknown>
  /** The operation as admitted: with the caller's scope, what says which subscribers share a result. */
  document: DocumentNode
  operationName: string | null
  variables: Record<string, unknown>
  /**
   * One event's result: the operation executed with the event as its root by the compiled
   * executor, in `context` (made for the event: loaders must not outlive it), its errors
   * formatted and masked as every answer's are.
   */
  execute(event: unknown, context: GraphqlContext): FormattedExecutionResult | Promise<FormattedExecutionResult>
}

/**
 * What one request came to: an answer (a query's or a mutation's result, or the refusal of any
 * operation, every error formatted and masked), or, for a subscription over a socket, its stream.
 */
export type PipelineOutcome =
  | { kind: 'answer'; result: FormattedExecutionResult }
  | ({ kind: 'stream' } & SubscriptionStream)

/** Socket-only: the `traceparent` and `tracestate` a socket's operations continue (its `connection_init`'s). */
export interface SocketTrace {
  parent?: string | undefined
  parentState?: string | undefined
}

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

  /**
   * Builds the schema (every resolver, and the Federation subgraph's fields when configured) and the pipeline, started.
   */
  static async start(options: PipelineOptions & { schema?: GraphQLSchema | undefined }): Promise<RequestPipeline> {
    const built = options.schema ?? (await buildGraphqlSchema())
    // Loaded only when asked for: federation's libraries add a second or more to every start.
    const schema = options.config.graphql.federation
      ? (await import('./subgraph.schema.js')).buildSubgraph(built)
      : built
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
    const jsonText = text
      ? { execution: text, applies: (context: unknown) => (context as GraphqlContext).transport === 'http' }
      : undefined
    const format = (result: ExecutionResult) => formatResultErrors(result, this.mask)
    this.apollo = new ApolloServer<GraphqlContext>({
      // Apollo's supported way to run operations with an executor of one's own (jit.executor.ts).
      gateway: compiledExecution(schema, { jsonText, around: inOperationSpan }),
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
        traceIdPlugin(),
        // Last: it answers a subscription once every other plugin has admitted it.
        subscriptionStartPlugin(schema, compiledEvents(schema), format),
      ],
    })
  }

  stop(): Promise<void> {
    return this.apollo.stop()
  }

  /**
   * Runs one request in `context` (made for its caller and transport) to its outcome. Over a
   * socket the whole request is one operation span, continuing `socket`'s trace.
   */
  run(request: PipelineRequest, context: GraphqlContext, socket: SocketTrace = {}): Promise<PipelineOutcome> {
    if (context.transport === 'http') return this.outcome(request, context)
    return withOperationSpan({ transport: 'ws', parent: socket.parent, parentState: socket.parentState }, () =>
      this.outcome(request, context),
    )
  }

  private async outcome(request: PipelineRequest, context: GraphqlContext): Promise<PipelineOutcome> {
    const response = await this.apollo.executeOperation(
      {
        ...(request.query ? { query: request.query } : {}),
        ...(request.variables ? { variables: request.variables } : {}),
        ...(request.operationName != null ? { operationName: request.operationName } : {}),
        ...(request.extensions ? { extensions: request.extensions } : {}),
      },
      { contextValue: context },
    )
    const body = response.body
    if (body instanceof StartedSubscription) return { kind: 'stream', ...body.stream }
    // Apollo answers incrementally only what its own executor defers: never here.
    if (body.kind !== 'single') throw new Error('an incremental answer was not expected')
    // Whoever serializes this answer does it with JSON.stringify: no marker may reach it.
    return { kind: 'answer', result: withJsonTextsParsed(body.singleResult) }
  }
}

/** The operation's span: over HTTP one of its own; over a socket, the request's, named now. */
function inOperationSpan(request: ExecutorRequest, run: () => Promise<ExecutionResult>): Promise<ExecutionResult> {
  const context = request.context as GraphqlContext
  const operation: OperationTrace = {
    operationType: request.operation?.operation,
    operationName: request.operationName,
    document: request.source,
    transport: context.transport,
  }
  if (context.transport === 'http') return withOperationSpan(operation, run)
  const span = tracingActive() ? trace.getActiveSpan() : undefined
  if (span) describeOperationSpan(span, operation)
  return run()
}

/** The body Apollo answers a started subscription with: what {@link RequestPipeline.run} hands on. */
class StartedSubscription {
  readonly kind = 'single'
  readonly singleResult: FormattedExecutionResult = {}
  constructor(readonly stream: SubscriptionStream) {}
}

/**
 * Starts a subscription that every plugin before it admitted (over HTTP one never is:
 * http.policy.ts), as Apollo's `responseForOperation` lets a plugin answer an operation itself:
 * its variables coerced, its source event stream created with the caller's context, and its
 * events executed by the compiled executor. A start that fails (a bad variable, a subscribe
 * resolver's refusal) is answered with its errors, as Apollo formats an execution's.
 */
function subscriptionStartPlugin(
  schema: GraphQLSchema,
  events: (document: DocumentNode, operationName: string | null) => EventExecution,
  format: (result: ExecutionResult) => FormattedExecutionResult,
): ApolloServerPlugin<GraphqlContext> {
  const listener: GraphQLRequestListener<GraphqlContext> = {
    async responseForOperation({ operation, document, request, contextValue, source, response }) {
      // Apollo asks even when no operation resolved (an unknown name): its executor answers that.
      if (operation?.operation !== 'subscription') return null
      const span = tracingActive() ? trace.getActiveSpan() : undefined
      if (span)
        describeOperationSpan(span, {
          operationType: 'subscription',
          operationName: operation.name?.value,
          document: source,
          transport: 'ws',
        })
      const operationName = request.operationName ?? null
      const variables = request.variables ?? {}
      const started = await createSourceEventStream({
        schema,
        document,
        operationName,
        variableValues: variables,
        contextValue,
      })
      if (!(Symbol.asyncIterator in started))
        return { http: response.http, body: { kind: 'single', singleResult: format(asApolloErrors(started)) } }
      const execution = events(document, operationName)
      const execute = (event: unknown, context: GraphqlContext) => {
        const result = execution(event, context, variables)
        return result instanceof Promise ? result.then(format) : format(result)
      }
      const stream = { source: started[Symbol.asyncIterator](), document, operationName, variables, execute }
      return { http: response.http, body: new StartedSubscription(stream) }
    },
  }
  return { requestDidStart: async ({ contextValue }) => (contextValue.transport === 'ws' ? listener : undefined) }
}

/** A variable that does not coerce is the caller's mistake: Apollo's BAD_USER_INPUT, as a query's would be. */
function asApolloErrors(result: ExecutionResult): ExecutionResult {
  const errors = result.errors?.map((error) =>
    error.nodes?.[0]?.kind === Kind.VARIABLE_DEFINITION && error.extensions.code == null
      ? new GraphQLError(error.message, {
          nodes: error.nodes,
          originalError: error.originalError,
          extensions: { ...error.extensions, code: 'BAD_USER_INPUT' },
        })
      : error,
  )
  return errors ? { ...result, errors } : result
}

/**
 * Every error answered names the trace it happened in (`extensions.traceId`), when tracing is on:
 * an operator handed an error finds its trace. Over HTTP that is the request's trace; over a
 * socket, the operation's.
 */
function traceIdPlugin(): ApolloServerPlugin<GraphqlContext> {
  const listener: GraphQLRequestListener<GraphqlContext> = {
    async willSendResponse({ response }) {
      if (response.body.kind !== 'single' || !response.body.singleResult.errors) return
      const traceId = traceExtensions().traceId
      if (!traceId) return
      response.body.singleResult.errors = response.body.singleResult.errors.map((error) => ({
        ...error,
        extensions: { ...error.extensions, traceId },
      }))
    },
  }
  return { requestDidStart: async () => (tracingActive() ? listener : undefined) }
}

/** Refuses an operation over the configured depth, aliases or cost before it runs. */
function queryLimitsPlugin<C extends BaseContext>(limits: Config['graphql']): ApolloServerPlugin<C> {
  const check = queryLimitsChecker(limits)
  const listener = {
    async didResolveOperation({
      schema,
      document,
      operationName,
      request,
    }: Parameters<NonNullable<GraphQLRequestListener<C>['didResolveOperation']>>[0]) {
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
