import type { ApolloServerPlugin, BaseContext, GraphQLRequestListener } from '@apollo/server'
import { type ExecutionResult, type FormattedExecutionResult, GraphQLError, Kind } from 'graphql'
import { traceExtensions, tracingActive } from '../../ops/operation.spans.js'
import { formatResultErrors, type maskUnexpectedErrors } from '../graphql.errors.js'
import type { GraphqlContext } from '../reads/request.context.js'
import { type UpstreamAccess, withUpstreamFreshness } from '../reads/upstream.access.js'
import type { queryLimitsChecker } from './query.limits.js'

// The rules of every answer: the plugins of Apollo's route (apollo.route.ts) that each add one,
// and the request core's own answers (request.pipeline.ts) written by the same rules.

/**
 * Every error answered names the trace it happened in (`extensions.traceId`), when tracing is on:
 * an operator handed an error finds its trace. Over HTTP that is the request's trace; over a
 * socket, the operation's.
 */
export function traceIdPlugin(): ApolloServerPlugin<GraphqlContext> {
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
export function queryLimitsPlugin<C extends BaseContext>(
  check: ReturnType<typeof queryLimitsChecker>,
): ApolloServerPlugin<C> {
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
export function noStorePlugin<C extends BaseContext>(): ApolloServerPlugin<C> {
  const listener = {
    async willSendResponse({ response }: Parameters<NonNullable<GraphQLRequestListener<C>['willSendResponse']>>[0]) {
      if (!response.http.headers.has('cache-control')) response.http.headers.set('cache-control', 'no-store')
    },
  }
  return { requestDidStart: async () => listener }
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
