import { ApolloServerErrorCode } from '@apollo/server/errors'
import {
  type DocumentNode,
  GraphQLError,
  type GraphQLSchema,
  getOperationAST,
  type OperationDefinitionNode,
  parse,
  validate,
} from 'graphql'
import { graphqlError } from '../graphql.errors.js'
import type { GraphqlContext } from '../reads/request.context.js'
import type { queryLimitsChecker } from './query.limits.js'
import { type TrustedDocuments, trustedDocumentFor } from './trusted.documents.js'

/** What a caller sends, over any transport. */
export interface PipelineRequest {
  query?: string | undefined
  variables?: Record<string, unknown> | null | undefined
  operationName?: string | null | undefined
  extensions?: Record<string, unknown> | null | undefined
}

/** An operation admitted to run: what graphql-js's `ExecutionArgs` name, and what the core keeps beside them. */
export interface Admitted {
  document: DocumentNode
  operation: OperationDefinitionNode
  /** The name as sent (null: none), which graphql-js resolves the operation by. */
  operationName: string | null
  variables: Record<string, unknown>
  /** The document's text, for the operation's span (a trusted document's, when it named one). */
  source: string
}

/** Why an operation may not run: its errors, as raised (formatted and masked by the core). */
export interface Refused {
  errors: readonly GraphQLError[]
  /** The operation, when the document resolved to one (its metric's labels). */
  operation?: OperationDefinitionNode | undefined
}

/** A document that parsed and validated, and the operations of it answered without an error over HTTP. */
interface Known {
  document: DocumentNode
  /** By operation name as sent: those the prepared path may run without Apollo (see {@link DocumentCache.answered}). */
  answered: Set<string | null>
}

/** Distinct document texts remembered; past it the oldest is forgotten (parsed and validated again). */
const TEXTS_MAX = 500
/** Longer texts are never kept: with {@link TEXTS_MAX}, the texts kept stay under 16 MB. */
const TEXT_MAX_LENGTH = 32_768

/**
 * The documents the core has parsed and validated, by text, so a reconnect storm of one
 * subscription validates it once; and which of their queries Apollo answered without an error
 * over HTTP, which the HTTP transport may then run again through the core without Apollo's
 * per-request work (the prepared path: a cache of this core, not a route of its own).
 */
export class DocumentCache {
  private readonly byText = new Map<string, Known>()

  constructor(private readonly schema: GraphQLSchema) {}

  /** The document of `text`, parsed and validated, or its errors with Apollo's codes. */
  document(text: string): DocumentNode | readonly GraphQLError[] {
    const known = this.byText.get(text)
    if (known) return known.document
    let document: DocumentNode
    try {
      document = parse(text)
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      const syntax = error instanceof GraphQLError ? error : undefined
      return [coded(message, ApolloServerErrorCode.GRAPHQL_PARSE_FAILED, syntax)]
    }
    const invalid = validate(this.schema, document)
    if (invalid.length > 0)
      return invalid.map((error) => coded(error.message, ApolloServerErrorCode.GRAPHQL_VALIDATION_FAILED, error))
    this.keep(text, { document, answered: new Set() })
    return document
  }

  /** Apollo's side: `text` (parsed by Apollo as `document`) answered operation `name` without an error. */
  answered(text: string, name: string | null, document: DocumentNode): void {
    if (text.length > TEXT_MAX_LENGTH) return
    const known = this.byText.get(text) ?? this.keep(text, { document, answered: new Set() })
    known.answered.add(name)
  }

  /** Whether operation `name` of `text` was answered without an error before. */
  wasAnswered(text: string, name: string | null): boolean {
    return this.byText.get(text)?.answered.has(name) ?? false
  }

  private keep(text: string, known: Known): Known {
    if (text.length > TEXT_MAX_LENGTH) return known
    if (this.byText.size >= TEXTS_MAX) {
      const oldest = this.byText.keys().next()
      if (!oldest.done) this.byText.delete(oldest.value)
    }
    this.byText.set(text, known)
    return known
  }
}

/** What admission checks with: the parts the core holds once. */
export interface AdmissionParts {
  schema: GraphQLSchema
  documents: DocumentCache
  trusted: TrustedDocuments
  checkLimits: ReturnType<typeof queryLimitsChecker>
}

/**
 * Admits one request in `context`, as Apollo's pipeline does for HTTP and with its codes:
 * trusted documents, the document (parsed and validated once per text), the operation it names,
 * subscriptions only over a socket, and the depth, alias and cost limits for its variables.
 */
export function admit(parts: AdmissionParts, request: PipelineRequest, context: GraphqlContext): Admitted | Refused {
  const trusted = trustedDocumentFor(context.scope, request, parts.trusted)
  if (trusted instanceof GraphQLError) return { errors: [trusted] }
  const source = trusted?.text ?? request.query
  if (!source)
    return {
      errors: [
        graphqlError(
          'BAD_REQUEST',
          'GraphQL operations must contain a non-empty `query` or a `persistedQuery` extension.',
        ),
      ],
    }
  const document = trusted?.document ?? parts.documents.document(source)
  if (!('kind' in document)) return { errors: document }
  const operationName = request.operationName ?? null
  const operation = getOperationAST(document, operationName)
  if (!operation) return { errors: [unresolved(document, operationName)] }
  if (operation.operation === 'subscription' && context.transport !== 'ws')
    return { errors: [subscriptionOverHttp()], operation }
  const variables = request.variables ?? {}
  const refusal = parts.checkLimits({ schema: parts.schema, document, operationName, variables })
  if (refusal) return { errors: [refusal], operation }
  return { document, operation, operationName, variables, source }
}

/** A subscription sent over HTTP: served over graphql-ws on the same URL (HTTP would answer once). */
export function subscriptionOverHttp(): GraphQLError {
  return graphqlError(
    'BAD_REQUEST',
    'Subscriptions are served over websockets (graphql-ws) at this same URL, not over HTTP.',
    { http: { status: 400 } },
  )
}

/** graphql-js's words for a document that names no operation it holds, with Apollo's code. */
function unresolved(document: DocumentNode, operationName: string | null): GraphQLError {
  const operations = document.definitions.filter((definition) => definition.kind === 'OperationDefinition')
  const message =
    operationName != null
      ? `Unknown operation named "${operationName}".`
      : operations.length > 1
        ? 'Must provide operation name if query contains multiple operations.'
        : 'Must provide an operation.'
  return coded(message, ApolloServerErrorCode.OPERATION_RESOLUTION_FAILURE)
}

function coded(message: string, code: string, cause?: GraphQLError): GraphQLError {
  return new GraphQLError(message, {
    ...(cause?.nodes ? { nodes: cause.nodes } : {}),
    ...(cause?.source ? { source: cause.source, positions: cause.positions } : {}),
    originalError: cause,
    extensions: { ...cause?.extensions, code },
  })
}
