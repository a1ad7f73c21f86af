import type { ApolloServerPlugin, GraphQLRequestListener } from '@apollo/server'
import type { DocumentNode, GraphQLSchema, OperationDefinitionNode } from 'graphql'
import type { Metrics } from '../../../work/metrics.registry.js'
import type { OperationLabels } from '../../ops/graphql.metrics.js'
import { stringifyWithJsonTexts } from '../reads/json.parts.js'
import type { GraphqlContext } from '../reads/request.context.js'
import { withUpstreamFreshness } from '../reads/upstream.access.js'
import type { OperationExecutor } from './jit.executor.js'
import type { queryLimitsChecker } from './query.limits.js'
import { type TrustedDocuments, trustedDocumentFor } from './trusted.documents.js'

/** What the prepared route shares with Apollo's pipeline: the same executor, checks and series. */
export interface PreparedParts {
  schema: GraphQLSchema
  execute: OperationExecutor
  checkLimits: ReturnType<typeof queryLimitsChecker>
  trusted: TrustedDocuments
  metrics: Pick<Metrics, 'graphqlSeconds' | 'graphqlPrepared'> | undefined
  labels: OperationLabels
}

/** A query Apollo parsed, validated and answered without an error over HTTP. */
interface Prepared {
  document: DocumentNode
  operation: OperationDefinitionNode
  /** The label of its operation in `livegate_graphql_seconds` (as Apollo's metrics plugin names it). */
  label: string
}

/** The answer of the prepared route: what the HTTP layer sends with status 200. */
export interface PreparedAnswer {
  contentType: string
  body: string
}

/** Distinct document texts remembered; past it the oldest is forgotten (Apollo answers it again). */
const TEXTS_MAX = 500
/** Longer texts are always Apollo's: with {@link TEXTS_MAX}, the texts kept stay under 16 MB. */
const TEXT_MAX_LENGTH = 32_768
const JSON_TYPE = 'application/json; charset=utf-8'
const GRAPHQL_RESPONSE_TYPE = 'application/graphql-response+json; charset=utf-8'

// The content type Apollo's negotiation picks for these exact `accept` headers (the ones stock
// clients and tools send); any other header is answered by Apollo, which negotiates it.
const CONTENT_TYPES = new Map<string, string>([
  ['', JSON_TYPE],
  ['*/*', JSON_TYPE],
  ['application/json', JSON_TYPE],
  ['application/graphql-response+json', GRAPHQL_RESPONSE_TYPE],
  ['application/graphql-response+json, application/json;q=0.9', GRAPHQL_RESPONSE_TYPE],
  ['application/graphql-response+json,application/json;q=0.9', GRAPHQL_RESPONSE_TYPE],
])

/**
 * The prepared route: a query whose text Apollo has already parsed, validated, resolved and
 * answered without error is run again without Apollo's per-request work (the sha256 of its text,
 * the document cache's lookup, a dozen plugin hooks, the gateway's request context, a content
 * negotiation per request). What stays per request is what can differ between two requests of
 * one text: the caller's key (authenticated, its scope in the context, the trusted-documents
 * check), the limits for its variables (the same checker Apollo's plugin calls, with its cache),
 * the execution (the same compiled executor, inside its operation span), the operation's metric
 * and the upstream freshness extension.
 *
 * Anything else is handed to Apollo as if this route did not exist: a text not seen, a mutation
 * or subscription, an unusual body or `accept`, a caller that is refused, a limit exceeded, and
 * any answer with an error (a query reads, so running it again through Apollo, which formats,
 * masks and logs its errors, changes nothing but the time).
 */
export class PreparedQueries {
  private readonly byText = new Map<string, Map<string | null, Prepared>>()

  constructor(private readonly parts: PreparedParts) {}

  /** Apollo's side: remembers each query it answered over HTTP without an error. */
  plugin(): ApolloServerPlugin<GraphqlContext> {
    const listener: GraphQLRequestListener<GraphqlContext> = {
      willSendResponse: async ({ request, source, document, operation, operationName, response, contextValue }) => {
        if (contextValue.transport !== 'http' || contextValue.scope.trustedOnly) return
        if (!source || source.length > TEXT_MAX_LENGTH || !document || operation?.operation !== 'query') return
        if (response.body.kind !== 'single' || response.body.singleResult.errors) return
        if ((response.http.status ?? 200) !== 200) return
        this.remember(source, request.operationName ?? null, {
          document,
          operation,
          label: this.parts.labels.label(operationName),
        })
      },
    }
    return { requestDidStart: async () => listener }
  }

  /**
   * The answer to a POST's parsed `body`, or undefined for Apollo to answer. `open`
   * authenticates the caller from its `authorization` header and makes its context.
   */
  async answer(
    body: unknown,
    headers: { accept?: string | undefined; authorization?: string | undefined },
    open: (authorization: string | undefined) => GraphqlContext | undefined,
  ): Promise<PreparedAnswer | undefined> {
    const startedAt = performance.now()
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined
    const { query, variables, operationName, extensions: sentExtensions } = body as Record<string, unknown>
    if (typeof query !== 'string' || sentExtensions != null) return undefined
    if (operationName != null && typeof operationName !== 'string') return undefined
    if (variables != null && (typeof variables !== 'object' || Array.isArray(variables))) return undefined
    const prepared = this.byText.get(query)?.get(operationName ?? null)
    const contentType = CONTENT_TYPES.get(headers.accept ?? '')
    if (!prepared || !contentType) return undefined
    const context = open(headers.authorization)
    if (!context || trustedDocumentFor(context.scope, { query }, this.parts.trusted) !== undefined) return undefined
    const { schema, checkLimits } = this.parts
    const { document, operation } = prepared
    const sent = { ...(operationName != null ? { operationName } : {}), ...(variables != null ? { variables } : {}) }
    const resolvedName = operation.name?.value ?? null
    const args = { schema, document, operationName: resolvedName, variables: sent.variables as Record<string, unknown> }
    if (checkLimits(args)) return undefined
    let result: Awaited<ReturnType<OperationExecutor>>
    try {
      result = await this.parts.execute({
        document,
        source: query,
        operation,
        operationName: resolvedName,
        request: sent as { operationName?: string; variables?: Record<string, unknown> },
        context,
      })
    } catch {
      return undefined
    }
    if (result.errors || result.data == null) return undefined
    // Apollo's field order (errors, data, extensions), and its serializer.
    const extensions = withUpstreamFreshness(context.upstream, result.extensions)
    const answered = { errors: undefined, data: result.data, extensions }
    const text = stringifyWithJsonTexts(answered)
    const metrics = this.parts.metrics
    if (metrics) {
      const seconds = (performance.now() - startedAt) / 1000
      metrics.graphqlSeconds.observe({ operation: prepared.label, type: 'query' }, seconds)
      metrics.graphqlPrepared.inc()
    }
    return { contentType, body: text }
  }

  private remember(text: string, operationName: string | null, prepared: Prepared): void {
    let byName = this.byText.get(text)
    if (!byName) {
      if (this.byText.size >= TEXTS_MAX) {
        const oldest = this.byText.keys().next()
        if (!oldest.done) this.byText.delete(oldest.value)
      }
      this.byText.set(text, (byName = new Map()))
    }
    if (!byName.has(operationName)) byName.set(operationName, prepared)
  }
}
