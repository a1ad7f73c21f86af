import fastifyApollo from '@as-integrations/fastify'
import type { FastifyPluginAsync } from 'fastify'
import type { Config } from '../../../config/config.schema.js'
import { authenticate, type Scope, unauthenticated } from '../auth.scope.js'
import type { GraphqlContext } from '../reads/request.context.js'
import { graphqlErrorBody } from '../graphql.errors.js'
import { csrfHook } from './http.policy.js'
import type { RequestPipeline } from './request.pipeline.js'

/** What the GraphQL endpoint is built from. */
export interface GraphqlPluginOptions {
  config: Config
  pipeline: RequestPipeline
  /** The context of a request, for a caller already authenticated to `scope`. */
  contextFor: (scope: Scope) => GraphqlContext
}

/** Where the endpoint answers. */
export const GRAPHQL_PATH = '/graphql'

/**
 * The HTTP transport of the request pipeline: Apollo's fastify integration at `/graphql`, GET
 * and POST, behind our CSRF policy; it authenticates the caller and translates, nothing more.
 */
export const graphqlPlugin: FastifyPluginAsync<GraphqlPluginOptions> = async (app, options) => {
  const { config, pipeline, contextFor } = options

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
  await app.register(fastifyApollo(pipeline.apollo), {
    path: GRAPHQL_PATH,
    method: ['GET', 'POST'],
    context: async (request) => {
      const scope = authenticate(request.headers.authorization, config.apiKeys)
      if (!scope) throw unauthenticated()
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
