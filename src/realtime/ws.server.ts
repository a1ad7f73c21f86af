import type { FastifyInstance } from 'fastify'
import { type DocumentNode, type ExecutionArgs, execute, type GraphQLError, type GraphQLSchema, subscribe } from 'graphql'
import { useServer } from 'graphql-ws/use/ws'
import { WebSocketServer } from 'ws'

/** The close code of a socket whose subscriber fell too far behind (see README, Realtime). */
export const SLOW_CONSUMER_CLOSE = { code: 4009, reason: 'Subscriber too slow: events were not read' } as const

/** The close code of a socket whose `connection_init` carried no valid API key. */
export const UNAUTHORIZED_CLOSE = { code: 4401, reason: 'Unauthorized: send { "authorization": "Bearer <key>" } in connection_init' } as const

/** What the websocket endpoint needs. */
export interface WebsocketOptions {
  schema: GraphQLSchema
  path: string
  /**
   * Authenticates a socket from its `connection_init` payload: what `context` is then given,
   * or null to close the socket with 4401.
   */
  authenticate: (connectionParams: Readonly<Record<string, unknown>> | undefined) => unknown | null
  /** The GraphQL context of one operation; `closeSocket` ends the client's socket. */
  context: (auth: unknown, closeSocket: (code: number, reason: string) => void) => object
  /** Largest message a client may send. */
  maxPayload: number
  /** The operation limits: an error refuses the subscription before it starts. */
  checkLimits: (args: { schema: GraphQLSchema; document: DocumentNode; operationName?: string | null; variables?: Record<string, unknown> | null }) => GraphQLError | undefined
}

/**
 * graphql-ws on the gateway's own HTTP server, at the same path as queries. Sockets are closed
 * with 1001 (going away) before the server stops taking connections.
 */
export function attachWebsocket(app: FastifyInstance, options: WebsocketOptions): void {
  const wss = new WebSocketServer({ noServer: true, maxPayload: options.maxPayload })
  app.server.on('upgrade', (request, socket, head) => {
    const path = (request.url ?? '').split('?', 1)[0]
    if (path !== options.path) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
      return
    }
    wss.handleUpgrade(request, socket, head, (client) => wss.emit('connection', client, request))
  })
  const authByConnection = new WeakMap<object, unknown>()
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
      context: (ctx) => options.context(authByConnection.get(ctx), (code, reason) => ctx.extra.socket.close(code, reason)),
      // Queries may come over the socket too: both kinds pass the same limits as over HTTP.
      execute: (args) => {
        const refusal = limitsOf(args)
        return refusal ? { errors: [refusal] } : execute(args)
      },
      subscribe: (args) => {
        const refusal = limitsOf(args)
        return refusal ? { errors: [refusal] } : subscribe(args)
      },
    },
    wss,
  )
  app.addHook('preClose', async () => {
    await server.dispose()
  })
}
