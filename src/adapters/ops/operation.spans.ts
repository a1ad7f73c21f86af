import { createHash } from 'node:crypto'
import { type Context, context, type Span, SpanKind, trace } from '@opentelemetry/api'
import type { FastifyRequest } from 'fastify'
import { activeTraceId, contextFromTraceparent, inSpan, tracingActive } from '../../work/tracing.spans.js'

export {
  activeTraceId,
  contextFromTraceparent,
  currentTraceparent,
  deliverySpan,
  tracingActive,
} from '../../work/tracing.spans.js'

/**
 * The spans of the GraphQL pipeline and the request's trace for the adapters. The pipeline calls
 * {@link withOperationSpan} once per operation, whichever transport brought it; graphql-ws hands
 * the `traceparent` of its `connection_init` payload as the parent (the socket's upgrade request
 * is long gone by the time an operation runs).
 */

// The semantic conventions' GraphQL attributes are still "incubating": copied here, as the
// package advises, rather than imported from its unstable entry point.
export const ATTR_GRAPHQL_OPERATION_TYPE = 'graphql.operation.type'
export const ATTR_GRAPHQL_OPERATION_NAME = 'graphql.operation.name'
export const ATTR_GRAPHQL_DOCUMENT = 'graphql.document'

/** One GraphQL operation, as the pipeline knows it once the document is parsed. */
export interface OperationTrace {
  /** `query`, `mutation` or `subscription`; omitted when the document did not resolve to one. */
  operationType?: 'query' | 'mutation' | 'subscription' | undefined
  operationName?: string | null | undefined
  /** The document's text; recorded as `graphql.document` (the conventions' attribute). */
  document?: string | undefined
  /** A trusted document's hash, when the request named one instead of sending text. */
  documentHash?: string | undefined
  transport: 'http' | 'ws'
  /**
   * A W3C `traceparent` to continue (graphql-ws: from `connection_init`, see
   * {@link traceparentOfConnectionInit}); without it the span is a child of the active context
   * (over HTTP, the request's span).
   */
  parent?: string | null | undefined
  /** The W3C `tracestate` that came with `parent`. */
  parentState?: string | null | undefined
}

/**
 * The `traceparent` and `tracestate` a graphql-ws client put in its `connection_init` payload
 * (`{ "traceparent": "00-…", "tracestate": "…" }`, beside its key), kept per connection and handed
 * to {@link withOperationSpan} for each of its operations. Anything but strings is ignored.
 */
export function traceparentOfConnectionInit(payload: unknown): { parent?: string; parentState?: string } {
  if (typeof payload !== 'object' || payload === null) return {}
  const { traceparent, tracestate } = payload as { traceparent?: unknown; tracestate?: unknown }
  if (typeof traceparent !== 'string' || traceparent.length > 128) return {}
  return typeof tracestate === 'string' && tracestate.length <= 512
    ? { parent: traceparent, parentState: tracestate }
    : { parent: traceparent }
}

// Documents longer than this are recorded by hash only: a span is no place for a 100 kB query.
const MAX_DOCUMENT_CHARS = 8192

/**
 * Runs one GraphQL operation inside its span, named as the semantic conventions say
 * (`query GetTask`, or the type alone for an anonymous one, `GraphQL Operation` before the type is
 * known); a rejection or throw marks it failed. Inside `run` the operation's span is active, so
 * log lines carry its trace id and {@link traceExtensions} finds it.
 */
export function withOperationSpan<T>(operation: OperationTrace, run: (span: Span | undefined) => T): T {
  if (!tracingActive()) return run(undefined)
  const parent = operation.parent ? contextFromTraceparent(operation.parent, operation.parentState) : undefined
  // Over HTTP the request's span is the server span; a graphql-ws operation has none above it.
  const kind = operation.transport === 'ws' ? SpanKind.SERVER : SpanKind.INTERNAL
  return inSpan(
    operationSpanName(operation),
    { kind, attributes: operationAttributes(operation), ...(parent ? { parent } : {}) },
    run,
  )
}

/**
 * Names `span` (one {@link withOperationSpan} opened before the document was read: a graphql-ws
 * request's, opened around the whole request) once the operation is known.
 */
export function describeOperationSpan(span: Span, operation: OperationTrace): void {
  span.updateName(operationSpanName(operation))
  span.setAttributes(operationAttributes(operation))
}

function operationSpanName({ operationType, operationName }: OperationTrace): string {
  return operationType ? (operationName ? `${operationType} ${operationName}` : operationType) : 'GraphQL Operation'
}

function operationAttributes(operation: OperationTrace): Record<string, string> {
  const { operationType, operationName, document } = operation
  const attributes: Record<string, string> = { 'livegate.transport': operation.transport }
  if (operationType) attributes[ATTR_GRAPHQL_OPERATION_TYPE] = operationType
  if (operationName) attributes[ATTR_GRAPHQL_OPERATION_NAME] = operationName
  if (document !== undefined && document.length <= MAX_DOCUMENT_CHARS) attributes[ATTR_GRAPHQL_DOCUMENT] = document
  const long = document !== undefined && document.length > MAX_DOCUMENT_CHARS
  const hash = operation.documentHash ?? (long ? createHash('sha256').update(document).digest('hex') : undefined)
  if (hash) attributes['livegate.document.sha256'] = hash
  return attributes
}

/**
 * The trace of the active span for a GraphQL error's `extensions` (`{ traceId }`), so an operator
 * handed an error finds its trace; `{}` when tracing is off or no span is active.
 */
export function traceExtensions(): { traceId?: string } {
  const traceId = activeTraceId()
  return traceId ? { traceId } : {}
}

/** Fields for a log line written outside a request's logger (graphql-ws): `{ traceId }` or `{}`. */
export function traceBindings(): { traceId?: string } {
  return traceExtensions()
}

/**
 * The context of an HTTP request's span (from `@fastify/otel`), or undefined when the request is
 * not traced. Fastify reads a body through stream events, which do not carry the context the
 * request's first hook entered: a handler enters it again with {@link inRequestContext}.
 */
export function requestContext(request: FastifyRequest): Context | undefined {
  if (!tracingActive()) return undefined
  const otel = (request as { opentelemetry?: () => { context?: Context | null } }).opentelemetry
  return typeof otel === 'function' ? (otel.call(request).context ?? undefined) : undefined
}

/** Runs `run` with the request's span as the active one (as is, when tracing is off). */
export function inRequestContext<T>(request: FastifyRequest, run: () => T): T {
  const requestTrace = requestContext(request)
  return requestTrace ? context.with(requestTrace, run) : run()
}

/** The request's span, to add what the route learned (the outcome of a callback). */
export function requestSpan(request: FastifyRequest): Span | undefined {
  const requestTrace = requestContext(request)
  return requestTrace ? trace.getSpan(requestTrace) : undefined
}
