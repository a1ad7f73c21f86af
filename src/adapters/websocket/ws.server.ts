import type { FastifyInstance } from 'fastify'
import { createSourceEventStream, type DocumentNode, type ExecutionArgs, execute, type GraphQLError, type GraphQLSchema } from 'graphql'
import { useServer } from 'graphql-ws/use/ws'
import type { Registry } from 'prom-client'
import { type WebSocket, WebSocketServer } from 'ws'
import { countShared, operationKey, SharedResults } from './shared.results.js'
import { sharedStream } from './shared.stream.js'
import { closeFor } from '../../model/error.catalogue.js'

/** The close code of a socket whose subscriber fell too far behind (see README, Realtime). */
export const SLOW_CONSUMER_CLOSE = closeFor('SUBSCRIBER_TOO_SLOW')

/** The close code of a socket whose `connection_init` carried no valid API key. */
export const UNAUTHORIZED_CLOSE = closeFor('UNAUTHORIZED')

/** What the websocket endpoint needs. */
export interface WebsocketOptions {
  schema: GraphQLSchema
  path: string
  /**
   * Authenticates a socket from its `connection_init` payload: what `context` is then given,
   * or null to close the socket with 4401.
   */
  authenticate: (connectionParams: Readonly<Record<string, unknown>> | undefined) => unknown | null
  /**
   * The GraphQL context of one operation; `closeSocket` ends the client's socket. A shared
   * result is executed with a context of its own, made without one.
   */
  context: (auth: unknown, closeSocket?: (code: number, reason: string) => void) => object
  /**
   * The document a caller's subscribe message stands for, when it is not the text it sent (a
   * trusted document named by hash), or why it is refused; undefined runs the text as sent.
   */
  documentFor?: (auth: unknown, payload: { query: string; extensions?: Record<string, unknown> | null | undefined }) => DocumentNode | GraphQLError | undefined
  /** Largest message a client may send. */
  maxPayload: number
  /** The operation limits: an error refuses the subscription before it starts. */
  checkLimits: (args: { schema: GraphQLSchema; document: DocumentNode; operationName?: string | null; variables?: Record<string, unknown> | null }) => GraphQLError | undefined
  /** How many undelivered events one subscriber may have before it is cut off (4009). */
  subscriberBuffer: number
  /** Where the shared results are counted (`livegate_subscription_results_total`, `livegate_subscription_messages_total`). */
  registry?: Registry | undefined
}

/** What a subscription needs of the socket and caller it came from. */
interface Operation {
  socket: WebSocket
  id: string
  auth: unknown
}

/**
 * graphql-ws on the gateway's own HTTP server, at the same path as queries. Sockets are closed
 * with 1001 (`GOING_AWAY` in the catalogue) before the server stops taking connections.
 *
 * Subscriptions share their results: subscribers of the same operation (document, operation
 * name, the variables its execution reads, scope) get one execution and one serialized payload per event (see
 * {@link SharedResults}), written to their sockets by {@link sharedStream}.
 */
export function attachWebsocket(app: FastifyInstance, options: WebsocketOptions): void {
  // No per-message deflate (ws's default, said here because `nextWriter` writes frames as they are without it).
  const wss = new WebSocketServer({ noServer: true, maxPayload: options.maxPayload, perMessageDeflate: false })
  app.server.on('upgrade', (request, socket, head) => {
    const path = (request.url ?? '').split('?', 1)[0]
    if (path !== options.path) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
      return
    }
    wss.handleUpgrade(request, socket, head, (client) => wss.emit('connection', client, request))
  })
  const authByConnection = new WeakMap<object, unknown>()
  // graphql-ws hands `subscribe` only the execution arguments: their context leads back here.
  const operations = new WeakMap<object, Operation>()
  const shared = new SharedResults()
  if (options.registry) countShared(options.registry, shared)
  const limitsOf = (args: ExecutionArgs) =>
    options.checkLimits({ schema: args.schema, document: args.document, operationName: args.operationName, variables: args.variableValues as Record<string, unknown> | undefined })
  const server = useServer(
    {
      schema: options.schema,
      // Close reasons never carry internal error messages.
      isProd: true,
      onConnect: (ctx) => {
        const auth = options.authenticate(ctx.connectionParams)
        if (auth === null) {
          // graphql-ws would answer a refusal with 4403; an unauthenticated client gets 4401.
          ctx.extra.socket.close(UNAUTHORIZED_CLOSE.code, UNAUTHORIZED_CLOSE.reason)
          return false
        }
        authByConnection.set(ctx, auth)
        return true
      },
      onSubscribe: (ctx, _id, payload) => {
        const found = options.documentFor?.(authByConnection.get(ctx), { query: payload.query, extensions: payload.extensions })
        if (found === undefined) return undefined
        if (!('kind' in found)) return [found]
        // A trusted document was validated when it was loaded.
        return { schema: options.schema, document: found, operationName: payload.operationName, variableValues: payload.variables }
      },
      context: (ctx, id) => {
        const auth = authByConnection.get(ctx)
        const socket = ctx.extra.socket
        const context = options.context(auth, (code, reason) => socket.close(code, reason))
        operations.set(context, { socket, id, auth })
        return context
      },
      // Queries may come over the socket too: both kinds pass the same limits as over HTTP.
      execute: (args) => {
        const refusal = limitsOf(args)
        return refusal ? { errors: [refusal] } : execute(args)
      },
      subscribe: async (args) => {
        const refusal = limitsOf(args)
        if (refusal) return { errors: [refusal] }
        const operation = operations.get(args.contextValue as object) as Operation
        // The subscriber's own context runs its subscribe resolver (its filter, cursor, replay).
        const source = await createSourceEventStream(args)
        if (!(Symbol.asyncIterator in source)) return source
        const key = operationKey(args, operation.auth)
        // A result is executed with a context of its own: loaders must not outlive one event.
        const executeShared = (event: unknown) => execute({ ...args, rootValue: event, contextValue: options.context(operation.auth) })
        return sharedStream(source[Symbol.asyncIterator](), {
          socket: operation.socket,
          id: operation.id,
          resultOf: (event) => shared.resultOf(key, event, executeShared),
          delivered: () => shared.countDelivery(),
          limit: options.subscriberBuffer,
          overflow: () => operation.socket.close(SLOW_CONSUMER_CLOSE.code, SLOW_CONSUMER_CLOSE.reason),
        })
      },
    },
    wss,
  )
  app.addHook('preClose', async () => {
    await server.dispose()
  })
}
