import type { FastifyBaseLogger } from 'fastify'
import {
  createSourceEventStream,
  type ExecutionArgs,
  type ExecutionResult,
  type FormattedExecutionResult,
  GraphQLError,
  type GraphQLSchema,
  getOperationAST,
  type OperationDefinitionNode,
} from 'graphql'
import type { Config } from '../../../config/config.schema.js'
import type { Metrics } from '../../../work/metrics.registry.js'
import { INVALID_OPERATION_TYPE, OperationLabels } from '../../ops/graphql.metrics.js'
import { type OperationTrace, withOperationSpan } from '../../ops/operation.spans.js'
import { AccessGate } from '../access.gate.js'
import { formatResultErrors, maskUnexpectedErrors } from '../graphql.errors.js'
import { formatAnswer, aroundExecution, isContext } from './answer.rules.js'
import { type GraphqlContext, readAfter } from '../reads/request.context.js'
import { withUpstreamFreshness } from '../reads/upstream.access.js'
import { compiledEvents, compiledExecution, type ExecutorRequest } from './jit.executor.js'
import { jsonTextExecution } from './json.rewrite.js'
import { queryLimitsChecker } from './query.limits.js'
import { type Admitted, admit, DocumentCache, type PipelineRequest, type Refused } from './request.admission.js'
import { buildGraphqlSchema } from './schema.build.js'
import { SubscriptionStream } from './subscription.stream.js'
import { loadTrustedDocuments } from './trusted.documents.js'

export type { PipelineRequest } from './request.admission.js'

/** What one request came to, for a caller that wants it whole (see {@link RequestPipeline.run}). */
export type PipelineOutcome =
  | { kind: 'answer'; result: FormattedExecutionResult }
  | ({ kind: 'stream' } & Pick<SubscriptionStream, 'source' | 'document' | 'operationName' | 'variables' | 'execute'>)

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
 * The request core every transport runs: it turns what a caller sent and its context (who asks,
 * over which transport, continuing which trace) into plain results: a refusal, an answer, or a
 * started subscription. In one place: trusted documents, the document (parsed and validated once
 * per text), the operation, subscriptions only over a socket, depth, alias and cost limits,
 * compiled execution (graphql-jit), masking (unexpected errors logged whole, answered with the
 * code only), the trace id on errors, operation metrics, the upstream freshness extension.
 *
 * graphql-ws (ws.server.ts) calls {@link admit}, then {@link execute} or {@link subscribe} with
 * the `ExecutionArgs` it made; Apollo's HTTP route (apollo.route.ts) is built from the same parts
 * and runs the same executor; a query Apollo answered before is answered again through the core
 * without Apollo ({@link answerKnown}: the prepared path, a cache of the core).
 */
export class RequestPipeline {
  readonly documents: DocumentCache
  readonly trusted: ReturnType<typeof loadTrustedDocuments>
  readonly checkLimits: ReturnType<typeof queryLimitsChecker>
  /** One set of metric labels for every route, so operation names are bounded once. */
  readonly labels = new OperationLabels()
  readonly mask: ReturnType<typeof maskUnexpectedErrors>
  /** The compiled executor, which Apollo runs as its gateway's. */
  readonly gateway: ReturnType<typeof compiledExecution>
  readonly metrics: Metrics | undefined
  /** Who is asking: an API key or a signed token, for every transport (access.gate.ts). */
  readonly access: AccessGate
  private readonly events: ReturnType<typeof compiledEvents>

  /** Builds the schema (every resolver, and the Federation subgraph's fields when configured) and the core. */
  static async start(options: PipelineOptions & { schema?: GraphQLSchema | undefined }): Promise<RequestPipeline> {
    const built = options.schema ?? (await buildGraphqlSchema())
    // Loaded only when asked for: federation's libraries add a second or more to every start.
    const schema = options.config.graphql.federation
      ? (await import('./subgraph.schema.js')).buildSubgraph(built)
      : built
    const pipeline = new RequestPipeline(schema, options)
    await pipeline.access.start()
    return pipeline
  }

  private constructor(
    readonly schema: GraphQLSchema,
    options: PipelineOptions,
  ) {
    const { config, log } = options
    this.trusted = loadTrustedDocuments(config.graphql.trustedDocuments, schema)
    this.documents = new DocumentCache(schema)
    this.checkLimits = queryLimitsChecker(config.graphql)
    this.metrics = options.metrics
    this.access = new AccessGate(config, log, options.metrics)
    this.mask = maskUnexpectedErrors((error) => log.error({ err: error }, 'graphql resolver failed'))
    const text = (options.jsonText ?? jsonTextByDefault()) ? jsonTextExecution(schema) : undefined
    // Over a socket graphql-ws serializes the answer itself: only HTTP's answers take JSON texts.
    const jsonText = text
      ? { execution: text, applies: (context: unknown) => isContext(context) && context.transport === 'http' }
      : undefined
    this.gateway = compiledExecution(schema, { jsonText, around: aroundExecution })
    this.events = compiledEvents(schema)
  }

  /** Nothing of its own to stop: Apollo's route is stopped by the HTTP transport that started it. */
  async stop(): Promise<void> {}

  /** Admits a request in `context`: its execution arguments, or its refusal formatted and masked. */
  admit(request: PipelineRequest, context: GraphqlContext): ExecutionArgs | FormattedExecutionResult {
    const startedAt = performance.now()
    const admitted = admit(this, request, context)
    if ('document' in admitted) {
      // A socket's request names its position here: its execution is handed only the variables.
      readAfter(context, request.extensions?.readAfter)
      return this.args(admitted, context)
    }
    return this.refuse(admitted, context, request, startedAt)
  }

  /** Runs a query or mutation admitted by {@link admit}: its answer, formatted and masked. */
  execute(args: ExecutionArgs): Promise<FormattedExecutionResult> {
    const startedAt = performance.now()
    const { context, operation, trace } = this.operationOf(args)
    return this.inSpan(trace, context, async () => {
      const result = await this.gateway.execute(executorRequest(args, context, operation)).catch(asFault)
      this.observe(operation.name?.value, operation.operation, startedAt)
      return this.format(result, context)
    })
  }

  /**
   * Starts a subscription admitted by {@link admit}: its source event stream created in the
   * caller's context, each event's execution compiled at once (an event is executed once per
   * distinct operation, often for thousands of subscribers); or the errors that refused it (a
   * bad variable, a subscribe resolver's refusal). `renew` makes each event a context like the
   * subscription's own (by default the event runs in that one).
   */
  subscribe(
    args: ExecutionArgs,
    renew?: (context: GraphqlContext) => GraphqlContext,
  ): Promise<SubscriptionStream | FormattedExecutionResult> {
    const startedAt = performance.now()
    const { context, operation, trace } = this.operationOf(args)
    return this.inSpan(trace, context, async () => {
      const started = await Promise.resolve()
        .then(() => createSourceEventStream(args))
        .catch(asFault)
      this.observe(operation.name?.value, 'subscription', startedAt)
      if (!(Symbol.asyncIterator in started)) return this.format(started, context)
      const operationName = args.operationName ?? null
      const variables = args.variableValues ?? {}
      const execution = this.events(args.document, operationName)
      const execute = (event: unknown, eventContext: GraphqlContext) => {
        const result = execution(event, eventContext, variables)
        return result instanceof Promise
          ? result.then((done) => formatResultErrors(done, this.mask))
          : formatResultErrors(result, this.mask)
      }
      const source = started[Symbol.asyncIterator]()
      const fresh = renew ? () => renew(context) : () => context
      return new SubscriptionStream(source, args.document, operationName, variables, context.scope, execute, fresh)
    })
  }

  /** A request whole: admitted, then answered or started (for callers that need no transport of their own). */
  async run(request: PipelineRequest, context: GraphqlContext): Promise<PipelineOutcome> {
    const args = this.admit(request, context)
    if (!('schema' in args)) return { kind: 'answer', result: args }
    if (getOperationAST(args.document, args.operationName)?.operation !== 'subscription')
      return { kind: 'answer', result: await this.execute(args) }
    const started = await this.subscribe(args)
    if (!(started instanceof SubscriptionStream)) return { kind: 'answer', result: started }
    const { source, document, operationName, variables } = started
    return { kind: 'stream', source, document, operationName, variables, execute: started.execute.bind(started) }
  }

  /**
   * The prepared path of HTTP: a query whose text and operation name Apollo answered before
   * without an error (kept in {@link documents}) is run again here, without Apollo's per-request
   * work. Undefined hands it back to Apollo: a text not seen, a mutation, a trusted-only caller,
   * a refusal, and any answer with an error (a query reads: Apollo running it again, formatting,
   * masking and logging its errors, changes nothing but the time).
   */
  async answerKnown(request: PipelineRequest & { query: string }, context: GraphqlContext) {
    const startedAt = performance.now()
    if (context.scope.trustedOnly || !this.documents.wasAnswered(request.query, request.operationName ?? null))
      return undefined
    const admitted = admit(this, request, context)
    if (!('document' in admitted) || admitted.operation.operation !== 'query') return undefined
    let result: ExecutionResult
    try {
      result = await this.gateway.execute(executorRequest(this.args(admitted, context), context, admitted.operation))
    } catch {
      return undefined
    }
    if (result.errors || result.data == null) return undefined
    this.observe(admitted.operation.name?.value, 'query', startedAt)
    this.metrics?.graphqlPrepared.inc()
    // Apollo's field order (errors, data, extensions), for its serializer.
    return {
      errors: undefined,
      data: result.data,
      extensions: withUpstreamFreshness(context.upstream, result.extensions),
    }
  }

  private args(admitted: Admitted, context: GraphqlContext): ExecutionArgs {
    const { document, operationName, variables } = admitted
    return { schema: this.schema, document, operationName, variableValues: variables, contextValue: context }
  }

  private operationOf(args: ExecutionArgs) {
    const context = args.contextValue
    const operation = getOperationAST(args.document, args.operationName)
    if (!isContext(context) || !operation) throw new Error('the core ran arguments it did not admit')
    const trace: OperationTrace = {
      operationType: operation.operation,
      operationName: operation.name?.value,
      document: args.document.loc?.source.body,
      transport: context.transport,
      parent: context.trace?.parent,
      parentState: context.trace?.parentState,
    }
    return { context, operation, trace }
  }

  /** Over a socket the operation is a span of its own, continuing the socket's trace; over HTTP the executor's. */
  private inSpan<T>(trace: OperationTrace, context: GraphqlContext, run: () => Promise<T>): Promise<T> {
    return context.transport === 'ws' ? withOperationSpan(trace, run) : run()
  }

  private refuse(refused: Refused, context: GraphqlContext, request: PipelineRequest, startedAt: number) {
    const { operation } = refused
    const trace: OperationTrace = {
      operationType: operation?.operation,
      operationName: operation?.name?.value,
      document: request.query ?? undefined,
      transport: context.transport,
      parent: context.trace?.parent,
      parentState: context.trace?.parentState,
    }
    return withOperationSpan(trace, () => {
      this.observe(operation?.name?.value, operation?.operation ?? INVALID_OPERATION_TYPE, startedAt)
      return this.format({ errors: refused.errors }, context)
    })
  }

  private format(result: ExecutionResult, context: GraphqlContext): FormattedExecutionResult {
    return formatAnswer(result, context.upstream, this.mask)
  }

  private observe(name: string | null | undefined, type: string, startedAt: number): void {
    if (!this.metrics) return
    const seconds = (performance.now() - startedAt) / 1000
    this.metrics.graphqlSeconds.observe({ operation: this.labels.label(name), type }, seconds)
  }
}

/** What the compiled executor reads of an admitted operation. */
function executorRequest(
  args: ExecutionArgs,
  context: GraphqlContext,
  operation: OperationDefinitionNode,
): ExecutorRequest {
  const operationName = args.operationName ?? undefined
  const variables = args.variableValues ?? undefined
  return {
    document: args.document,
    source: args.document.loc?.source.body,
    operation,
    operationName: operation.name?.value ?? null,
    request: { ...(operationName ? { operationName } : {}), ...(variables ? { variables } : {}) },
    context,
  }
}

/** A fault the executor threw rather than answered: an answer whose one error is masked (and logged) as any other. */
function asFault(error: unknown): ExecutionResult {
  const originalError = error instanceof Error ? error : new Error(String(error))
  return { errors: [new GraphQLError(originalError.message, { originalError })] }
}
