import type { FastifyInstance } from 'fastify'
import { GraphQLError } from 'graphql'
import { useServer } from 'graphql-ws/use/ws'
import type { Registry } from 'prom-client'
import { type WebSocket, WebSocketServer } from 'ws'
import { countShared, operationKey, SharedResults } from './shared.results.js'
import { sharedStream } from './shared.stream.js'
import { SocketHeartbeat } from './socket.heartbeat.js'
import { closeFor } from '../../model/error.catalogue.js'
import { accessOf, type Scope } from '../graphql/auth.scope.js'
import type { GraphqlContext } from '../graphql/reads/request.context.js'
import { traceparentOfConnectionInit } from '../ops/operation.spans.js'
import type { RequestPipeline } from '../graphql/pipeline/request.pipeline.js'
import { asExecutionResult, FormattedError, SubscriptionStream } from '../graphql/pipeline/subscription.stream.js'

/** The close code of a socket whose subscriber fell too far behind (see README, Realtime). */
export const SLOW_CONSUMER_CLOSE = closeFor('SUBSCRIBER_TOO_SLOW')

/** The close code of a socket whose `connection_init` carried no valid API key. */
export const UNAUTHORIZED_CLOSE = closeFor('UNAUTHORIZED')

/** What the websocket transport needs. */
export interface WebsocketOptions {
  /** The request core: every subscribe message is admitted, executed or subscribed by it. */
  pipeline: Pick<RequestPipeline, 'access' | 'admit' | 'execute' | 'subscribe'>
  path: string
  /** The GraphQL context of one operation, or of one event of a subscription, continuing `trace`. */
  context: (scope: Scope, trace: GraphqlContext['trace']) => GraphqlContext
  /** Largest message a client may send. */
  maxPayload: number
  /** How many undelivered events one subscriber may have before it is cut off (4009). */
  subscriberBuffer: number
  /** Between two pings of a socket ({@link SocketHeartbeat}); 0 pings none. */
  keepAliveMs: number
  /**
   * Where the shared results are counted (`livegate_subscription_results_total`,
   * `livegate_subscription_messages_total`).
   */
  registry?: Registry | undefined
}

/** Who is on a socket, known from its `connection_init` (graphql-ws keeps it in the connection's `extra`). */
interface Caller {
  scope: Scope
  trace: GraphqlContext['trace']
}

/**
 * The graphql-ws transport, on the gateway's own HTTP server, at the same path as queries. It
 * only translates, as grafserv's does: `onSubscribe` has the request core admit the message and
 * hands graphql-ws the execution arguments (or the refusal, as `error`), and graphql-ws's
 * `execute` and `subscribe` are the core's, whose results come formatted and masked. Sockets are
 * closed with 1001 (`GOING_AWAY` in the catalogue) before the server stops taking connections.
 *
 * Subscriptions share their results: `onOperation` writes a started subscription's events itself,
 * one execution and one serialized payload per event and operation (document, operation name,
 * the variables its execution reads, scope: see {@link SharedResults}) for all its subscribers,
 * written to their sockets by {@link sharedStream}.
 */
export function attachWebsocket(app: FastifyInstance, options: WebsocketOptions): void {
  const { pipeline } = options
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
  const shared = new SharedResults()
  if (options.registry) countShared(options.registry, shared)
  // Pings on the scheduler, not graphql-ws's timers per socket (its keep-alive is off: 0 below).
  const heartbeat = new SocketHeartbeat(options.keepAliveMs)
  wss.on('connection', (socket) => heartbeat.add(socket))
  heartbeat.start()
  const renew = (context: GraphqlContext) => options.context(context.scope, context.trace)
  const server = useServer<Record<string, unknown>, { caller?: Caller }>(
    {
      // Close reasons never carry internal error messages.
      isProd: true,
      onConnect: async (ctx) => {
        // The key or token of `connection_init`, as HTTP's `Authorization` header carries it.
        const authorization = ctx.connectionParams?.authorization ?? ctx.connectionParams?.Authorization
        const address = ctx.extra.request.socket.remoteAddress
        const scope = await pipeline.access.admit(
          typeof authorization === 'string' ? authorization : undefined,
          address,
        )
        if (scope instanceof Error) {
          // graphql-ws would answer a refusal with 4403; an unauthenticated client gets 4401, with the reason.
          ctx.extra.socket.close(UNAUTHORIZED_CLOSE.code, `Unauthorized: ${scope.extensions.reason}`)
          return false
        }
        // The socket's operations continue the trace its connection_init named, if any.
        ctx.extra.caller = { scope, trace: traceparentOfConnectionInit(ctx.connectionParams) }
        closeAtExpiry(ctx.extra.socket, scope.caller?.expiresAt)
        return true
      },
      onSubscribe: (ctx, _id, payload) => {
        const caller = ctx.extra.caller
        if (!caller) throw new Error('a subscribe message before the connection was acknowledged')
        const admitted = pipeline.admit(payload, options.context(caller.scope, caller.trace))
        if ('schema' in admitted) return admitted
        // Refused before it ran: graphql-ws's `error` message, as the protocol asks.
        const refused = admitted.errors?.length
          ? admitted.errors.map((error) => new FormattedError(error))
          : [new GraphQLError('Internal error.', { extensions: { code: 'INTERNAL_SERVER_ERROR' } })]
        return refused
      },
      execute: async (args) => asExecutionResult(await pipeline.execute(args)),
      subscribe: async (args) => {
        const started = await pipeline.subscribe(args, renew)
        return started instanceof SubscriptionStream ? started : asExecutionResult(started)
      },
      // A started subscription is written here rather than iterated by graphql-ws, which would
      // execute and stringify each event per subscriber.
      onOperation: (ctx, id, _payload, _args, result) => {
        if (!(result instanceof SubscriptionStream)) return undefined
        const socket = ctx.extra.socket
        const key = shared.operation(operationKey(result, accessOf(result.scope)))
        const execute = (event: unknown) => result.execute(event)
        return sharedStream(result.source, {
          socket,
          // Node hands the upgrade the request's own TCP socket, which `ws` then writes to.
          transport: ctx.extra.request.socket,
          id,
          resultOf: (event) => shared.resultOf(key, event, execute),
          delivered: () => shared.countDelivery(),
          limit: options.subscriberBuffer,
          overflow: () => socket.close(SLOW_CONSUMER_CLOSE.code, SLOW_CONSUMER_CLOSE.reason),
        })
      },
    },
    wss,
    0,
  )
  app.addHook('preClose', async () => {
    await heartbeat.stop()
    await server.dispose()
  })
}

/** The longest delay a Node timer keeps (about 24.8 days); a token valid longer is not closed by time. */
const LONGEST_TIMER_MS = 2 ** 31 - 1
/** The close of a socket whose token expired: the client signs in again and resumes from its cursor. */
const EXPIRED_CLOSE = { code: UNAUTHORIZED_CLOSE.code, reason: 'Unauthorized: expired' }

/**
 * A socket opened with a token is closed 4401 when the token expires: a time limit of its own,
 * cleared when the socket closes first (a key does not expire, so its sockets have none).
 */
function closeAtExpiry(socket: WebSocket, expiresAt: Date | undefined): void {
  if (!expiresAt) return
  const delay = Math.max(0, expiresAt.getTime() - Date.now())
  if (delay > LONGEST_TIMER_MS) return
  const limit = setTimeout(() => socket.close(EXPIRED_CLOSE.code, EXPIRED_CLOSE.reason), delay)
  socket.once('close', () => clearTimeout(limit))
}
