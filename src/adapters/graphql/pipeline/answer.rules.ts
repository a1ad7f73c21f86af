import { type ExecutionResult, type FormattedExecutionResult, GraphQLError, Kind } from 'graphql'
import { type OperationTrace, traceExtensions, tracingActive, withOperationSpan } from '../../ops/operation.spans.js'
import { formatResultErrors, type maskUnexpectedErrors } from '../graphql.errors.js'
import { type GraphqlContext, routedOperation } from '../reads/request.context.js'
import { type UpstreamAccess, withUpstreamFreshness } from '../reads/upstream.access.js'
import type { ExecutorRequest } from './jit.executor.js'

// How the request core (request.pipeline.ts) writes and traces every answer it gives, by the
// rules Apollo's route keeps with its plugins (http/answer.plugins.ts, reads/upstream.access.ts).

/** Whether a value is a request's context (graphql-js types `contextValue` as `unknown`). */
export function isContext(value: unknown): value is GraphqlContext {
  return typeof value === 'object' && value !== null && 'scope' in value && 'loaders' in value
}

/**
 * What runs around every execution: the database it reads from (a replica, or the primary for a
 * mutation and a position a replica has not reached: reads/request.context.ts), then the span.
 */
export function aroundExecution(request: ExecutorRequest, run: () => Promise<ExecutionResult>) {
  if (!isContext(request.context) || !request.context.reads) return inHttpSpan(request, run)
  const extensions = (request.request as { extensions?: Record<string, unknown> }).extensions
  const kind = request.operation?.operation
  return routedOperation(request.context, kind, extensions, () => inHttpSpan(request, run))
}

/** The operation's span over HTTP, a child of the request's (a socket's is opened by the core itself). */
export function inHttpSpan(request: ExecutorRequest, run: () => Promise<ExecutionResult>): Promise<ExecutionResult> {
  if (!isContext(request.context) || request.context.transport !== 'http') return run()
  const operation: OperationTrace = {
    operationType: request.operation?.operation,
    operationName: request.operationName,
    document: request.source,
    transport: 'http',
  }
  return withOperationSpan(operation, run)
}

/**
 * An answer: its errors formatted as Apollo formats them (a variable that does not coerce is
 * BAD_USER_INPUT), then masked, each naming the trace it happened in when tracing is on; the
 * upstream freshness extension when what it read is stale.
 */
export function formatAnswer(
  result: ExecutionResult,
  upstream: UpstreamAccess,
  mask: ReturnType<typeof maskUnexpectedErrors>,
): FormattedExecutionResult {
  const formatted = formatResultErrors(asUserInputErrors(result), mask)
  const traceId = formatted.errors && tracingActive() ? traceExtensions().traceId : undefined
  const errors = traceId
    ? formatted.errors?.map((error) => ({ ...error, extensions: { ...error.extensions, traceId } }))
    : formatted.errors
  const extensions = withUpstreamFreshness(upstream, formatted.extensions)
  return { ...formatted, ...(errors ? { errors } : {}), ...(extensions ? { extensions } : {}) }
}

/** A variable that does not coerce is the caller's mistake: Apollo's BAD_USER_INPUT (its own test of one). */
function asUserInputErrors(result: ExecutionResult): ExecutionResult {
  if (!result.errors) return result
  const errors = result.errors.map((error) => {
    const nodes = error.nodes
    const node = nodes?.length === 1 ? nodes[0] : undefined
    if (!nodes || node?.kind !== Kind.VARIABLE_DEFINITION || error.extensions.code != null) return error
    const variable = `Variable "$${node.variable.name.value}"`
    const userInput = ['has invalid value', 'got invalid value ', 'of required type ', 'of non-null type '].some(
      (words) => error.message.startsWith(`${variable} ${words}`),
    )
    if (!userInput) return error
    return new GraphQLError(error.message, {
      nodes,
      ...(error.originalError ? { originalError: error.originalError } : {}),
      extensions: { ...error.extensions, code: 'BAD_USER_INPUT' },
    })
  })
  return { ...result, errors }
}
