import fastifyApollo from '@as-integrations/fastify'
import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import type { Config } from '../../../config/config.schema.js'
import type { Scope } from '../auth.scope.js'
import type { GraphqlContext } from '../reads/request.context.js'
import { graphqlErrorBody } from '../graphql.errors.js'
import { csrfHook } from './http.policy.js'
import { stringifyWithJsonTexts } from '../reads/json.parts.js'
import { apolloRoute } from './apollo.route.js'
import type { PipelineRequest, RequestPipeline } from '../pipeline/request.pipeline.js'

/** What the GraphQL endpoint is built from. */
export interface GraphqlPluginOptions {
  config: Config
  pipeline: RequestPipeline
  /** The context of a request, for a caller already authenticated to `scope`. */
  contextFor: (scope: Scope) => GraphqlContext
}

/** Where the endpoint answers. */
export const GRAPHQL_PATH = '/graphql'

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

/** A POST's body as the prepared path takes it (a query's text, no extensions), or undefined for Apollo. */
function plainRequest(body: unknown): (PipelineRequest & { query: string }) | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined
  const { query, variables, operationName, extensions } = body as Record<string, unknown>
  if (typeof query !== 'string' || extensions != null) return undefined
  if (operationName != null && typeof operationName !== 'string') return undefined
  if (variables == null) return { query, operationName }
  if (typeof variables !== 'object' || Array.isArray(variables)) return undefined
  return { query, operationName, variables: variables as Record<string, unknown> }
}

/**
 * The HTTP transport of the request pipeline: Apollo's fastify integration at `/graphql`, GET
 * and POST, behind our CSRF policy; it authenticates the caller and translates, nothing more.
 */
export const graphqlPlugin: FastifyPluginAsync<GraphqlPluginOptions> = async (app, options) => {
  const { pipeline, contextFor } = options
  // A request's caller is admitted once: the prepared path's admission is Apollo's too, when it hands the request on.
  const callers = new WeakMap<object, ReturnType<RequestPipeline['access']['admit']>>()
  const callerOf = (request: FastifyRequest) => {
    let caller = callers.get(request)
    if (!caller) {
      caller = pipeline.access.admit(request.headers.authorization, request.ip)
      callers.set(request, caller)
    }
    return caller
  }

  // Errors fastify raises before Apollo runs (unreadable JSON, an unsupported body type) are
  // answered in the GraphQL response shape, as a GraphQL client expects on this path.
  app.setErrorHandler(async (error, request, reply) => {
    const { statusCode, message: reason } = error as { statusCode?: unknown; message?: unknown }
    const status = typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500 ? statusCode : 500
    if (status === 500) request.log.error({ err: error }, 'graphql request failed')
    const message = status === 500 ? 'Internal error.' : typeof reason === 'string' ? reason : 'Bad request.'
    return reply
      .code(status)
      .type('application/json; charset=utf-8')
      .send(graphqlErrorBody(status === 500 ? 'INTERNAL_SERVER_ERROR' : 'BAD_REQUEST', message))
  })

  app.addHook('onRequest', csrfHook(GRAPHQL_PATH))
  const apollo = apolloRoute(pipeline, app.log)
  await apollo.start()
  app.addHook('onClose', () => apollo.stop())
  // A query Apollo has answered before is answered again by the core without it (its prepared
  // path); what the core hands back goes on to Apollo as it came.
  app.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'POST' || request.routeOptions.url !== GRAPHQL_PATH) return
    const sent = plainRequest(request.body)
    const contentType = CONTENT_TYPES.get(request.headers.accept ?? '')
    if (!sent || !contentType || !pipeline.documents.wasAnswered(sent.query, sent.operationName ?? null)) return
    const scope = await callerOf(request)
    if (scope instanceof Error) return
    const answer = await pipeline.answerKnown(sent, contextFor(scope))
    if (!answer) return
    void reply.code(200).header('cache-control', 'no-store')
    return reply.header('content-type', contentType).send(stringifyWithJsonTexts(answer))
  })
  await app.register(fastifyApollo(apollo), {
    path: GRAPHQL_PATH,
    method: ['GET', 'POST'],
    context: async (request) => {
      const scope = await callerOf(request)
      if (scope instanceof Error) throw scope
      return contextFor(scope)
    },
  })

  // The path exists, so other methods get a 405 naming the allowed ones, not a 404.
  app.route({
    method: ['PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: GRAPHQL_PATH,
    handler: async (_request, reply) =>
      reply
        .code(405)
        .header('allow', 'GET, POST')
        .type('application/json; charset=utf-8')
        .send(graphqlErrorBody('BAD_REQUEST', 'Send GraphQL requests by GET or POST.')),
  })
}
