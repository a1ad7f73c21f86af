import type { ApolloServerPlugin, BaseContext, GraphQLRequestListener } from '@apollo/server'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { graphqlErrorBody } from '../graphql.errors.js'
import { subscriptionOverHttp } from '../pipeline/request.admission.js'
import type { GraphqlErrorCode } from '../../../model/error.catalogue.js'

type Headers = FastifyRequest['headers']

// The content types a browser sends cross-site without a CORS preflight (Fetch's CORS-safelisted ones).
const SIMPLE_CONTENT_TYPES = new Set(['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain'])
// Headers Apollo's clients send to prove a preflight happened; a page on another site cannot set them.
const PREFLIGHT_HEADERS = ['apollo-require-preflight', 'x-apollo-operation-name']
const GRAPHQL_RESPONSE_JSON = 'application/graphql-response+json'

/** What a refused request is told, naming each way through. */
export const CSRF_MESSAGE =
  'This operation has been blocked as a potential Cross-Site Request Forgery (CSRF). Send a POST with ' +
  "'content-type: application/json', or a GET that accepts application/graphql-response+json (as " +
  'GraphQL-over-HTTP clients do) ' +
  "or carries a non-empty 'apollo-require-preflight' header."

const mediaTypes = (header: string | string[] | undefined): string[] =>
  (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((part) => (part.split(';')[0] ?? '').trim().toLowerCase())
    .filter((type) => type !== '')

/**
 * Whether a request to the GraphQL endpoint may run, judged from its method and headers alone.
 *
 * A POST needs a content type that forces a preflight (application/json), as Apollo's own CSRF
 * prevention asks. A GET may also pass by accepting application/graphql-response+json, which is
 * what stock clients send (urql's default GET). That header forces no preflight, so it is not what
 * makes such a GET safe: a GET only ever runs a query (Apollo answers a mutation over GET with 405,
 * and the schema has none), and the API key travels in an Authorization header that a browser never
 * attaches by itself, so a page on another site can neither change state nor read with a user's
 * credentials. The header check keeps plain `<img>`/`<link>` GETs out, as before.
 */
export function csrfAllows(method: string, headers: Headers): boolean {
  const contentType = mediaTypes(headers['content-type'])[0]
  if (contentType !== undefined && !SIMPLE_CONTENT_TYPES.has(contentType)) return true
  if (PREFLIGHT_HEADERS.some((name) => (headers[name]?.length ?? 0) > 0)) return true
  return method === 'GET' && mediaTypes(headers.accept).includes(GRAPHQL_RESPONSE_JSON)
}

/**
 * A fastify `onRequest` hook for the endpoint's GET and POST: refuses, before the body is read,
 * what {@link csrfAllows} does not admit, in the GraphQL error shape with code BAD_REQUEST.
 */
export function csrfHook(path: string) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.routeOptions.url !== path || (request.method !== 'GET' && request.method !== 'POST')) return
    if (csrfAllows(request.method, request.headers)) return
    return reply
      .code(400)
      .header('cache-control', 'no-store')
      .type('application/json; charset=utf-8')
      .send(graphqlErrorBody('BAD_REQUEST', CSRF_MESSAGE))
  }
}

// Errors of a well-formed request that Apollo answers with 400: the document does not parse or
// validate, or the variables do not coerce.
const REQUEST_ERROR_CODES = new Set<string>([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_USER_INPUT',
] satisfies GraphqlErrorCode[])

/**
 * Two rules of GraphQL-over-HTTP for the status. First, an answer with data is a 2xx: a request
 * whose fields answer on their own (several mutations, say) may have some answered and some
 * refused, and a refusal's status (403, 429) then belongs to its field; a client that read 429 as
 * "nothing happened" and retried would act twice. Second, GraphQL-over-HTTP asks for 200 on every
 * well-formed request when the answer is
 * application/json, because such a client may not read the body of a 4xx. A client that names
 * application/json and not application/graphql-response+json gets a 200 for a document that does
 * not parse or validate, or for variables that do not coerce; a client that accepts the GraphQL
 * media type, or anything (`*\/*`, curl's and fetch's default), keeps the 400 that says so in the status.
 */
export function jsonClientStatusPlugin<C extends BaseContext>(): ApolloServerPlugin<C> {
  const listener = {
    async willSendResponse({
      request,
      response,
    }: Parameters<NonNullable<GraphQLRequestListener<C>['willSendResponse']>>[0]) {
      const status = response.http.status
      if (status === undefined || status < 400 || response.body.kind !== 'single') return
      const answered = response.body.singleResult.data
      if (answered && Object.values(answered).some((value) => value !== null)) {
        response.http.status = 200
        return
      }
      if (status !== 400) return
      const accepted = mediaTypes(request.http?.headers.get('accept'))
      if (!accepted.includes('application/json') || accepted.includes(GRAPHQL_RESPONSE_JSON)) return
      const { data, errors } = response.body.singleResult
      if (data !== undefined || !errors?.length) return
      if (errors.every((error) => REQUEST_ERROR_CODES.has(String(error.extensions?.code)))) response.http.status = 200
    },
  }
  return { requestDidStart: async () => listener }
}

/**
 * A subscription sent over HTTP is refused with a clear 400: subscriptions are served over
 * graphql-ws on the same URL (their resolvers need the socket, and HTTP would answer once).
 */
export function subscriptionsOverSocketPlugin<
  C extends BaseContext & { transport: 'http' | 'ws' },
>(): ApolloServerPlugin<C> {
  const listener: GraphQLRequestListener<C> = {
    async didResolveOperation({ operation, contextValue }) {
      if (operation?.operation === 'subscription' && contextValue.transport !== 'ws') throw subscriptionOverHttp()
    },
  }
  return { requestDidStart: async () => listener }
}
