import type { ApolloServerPlugin, BaseContext, GraphQLRequestListener } from '@apollo/server'
import { traceExtensions, tracingActive } from '../../ops/operation.spans.js'
import type { GraphqlContext } from '../reads/request.context.js'
import type { queryLimitsChecker } from '../pipeline/query.limits.js'

// Plugins of Apollo's route (apollo.route.ts) that each add one rule to every answer, as the
// request core writes its own answers (pipeline/answer.rules.ts).

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
