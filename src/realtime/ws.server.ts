import type { FastifyInstance } from 'fastify'
import type { GraphQLSchema } from 'graphql'
import { useServer } from 'graphql-ws/use/ws'
import { WebSocketServer } from 'ws'

/** The close code of a socket whose subscriber fell too far behind (see README, Realtime). */
export const SLOW_CONSUMER_CLOSE = { code: 4009, reason: 'Subscriber too slow: events were not read' } as const

/** What the websocket endpoint needs. */
export interface WebsocketOptions {
  schema: GraphQLSchema
  path: string
  /** The GraphQL context of one operation; `closeSocket` ends the client's socket. */
  context: (closeSocket: (code: number, reason: string) => void) => object
  /** Largest message a client may send. */
  maxPayload: number
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
  const server = useServer(
    {
      schema: options.schema,
      // Close reasons never carry internal error messages.
      isProd: true,
      context: (ctx) => options.context((code, reason) => ctx.extra.socket.close(code, reason)),
    },
    wss,
  )
  app.addHook('preClose', async () => {
    await server.dispose()
  })
}
