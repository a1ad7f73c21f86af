import type { Duplex } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import { execute, type FormattedExecutionResult, GraphQLError, type GraphQLFormattedError } from 'graphql'
import { useServer } from 'graphql-ws/use/ws'
import type { Registry } from 'prom-client'
import { type WebSocket, WebSocketServer } from 'ws'
import { countShared, operationKey, SharedResults } from './shared.results.js'
import { sharedStream } from './shared.stream.js'
import { closeFor } from '../../model/error.catalogue.js'
import type { GraphqlContext, SubscriptionSlot } from '../graphql/reads/request.context.js'
import { traceparentOfConnectionInit } from '../ops/tracing.spans.js'
import type { PipelineOutcome, RequestPipeline } from '../graphql/pipeline/request.pipeline.js'

/** The close code of a socket whose subscriber fell too far behind (see README, Realtime). */
export const SLOW_CONSUMER_CLOSE = closeFor('SUBSCRIBER_TOO_SLOW')

/** The close code of a socket whose `connection_init` carried no valid API key. */
export const UNAUTHORIZED_CLOSE = closeFor('UNAUTHORIZED')

/** What the websocket transport needs. */
export interface WebsocketOptions {
  /** The one request pipeline: every subscribe message runs through it. */
  pipeline: Pick<RequestPipeline, 'run' | 'format' | 'schema'>
  path: string
  /**
   * Authenticates a socket from its `connection_init` payload: what `context` is then given,
   * or null to close the socket with 4401.
   */
  authenticate: (connectionParams: Readonly<Record<string, unknown>> | undefined) => unknown | null
  /**
   * The GraphQL context of one operation; `closeSocket` ends the client's socket, and `slot` is
   * where the pipeline leaves a subscription. A shared result is executed with a context of its
   * own, made without either.
   */
  context: (auth: unknown, closeSocket?: (code: number, reason: string) => void, slot?: SubscriptionSlot) => GraphqlContext
  /** Largest message a client may send. */
  maxPayload: number
  /** How many undelivered events one subscriber may have before it is cut off (4009). */
  subscriberBuffer: number
  /** Where the shared results are counted (`livegate_subscription_results_total`, `livegate_subscription_messages_total`). */
  registry?: Registry | undefined
}

/** What graphql-ws is handed back for an operation the pipeline has already run or started. */
interface Ran {
  outcome: PipelineOutcome
  socket: WebSocket
  id: string
  auth: unknown
}

/**
 * The graphql-ws transport, on the gateway's own HTTP server, at the same path as queries. It
 * only translates: a subscribe message goes through the request pipeline as an HTTP request
 * does (so scope, trusted documents, limits, masking and metrics are the same), and the outcome
 * is written back: an answer as `next` and `complete` (a refusal, with no data, as `error`), a
 * subscription's events as they come. Sockets are closed with 1001 (`GOING_AWAY` in the
 * catalogue) before the server stops taking connections.
 *
 * Subscriptions share their results: subscribers of the same operation (document, operation
 * name, the variables its execution reads, scope) get one execution and one serialized payload
 * per event (see {@link SharedResults}), written to their sockets by {@link sharedStream}.
 */
export function attachWebsocket(app: FastifyInstance, options: WebsocketOptions): void {
  const { pipeline } = options
  // No per-message deflate (ws's default, said here because `nextWriter` writes frames as they are without it).
  const wss = new WebSocketServer({ noServer: true, maxPayload: options.maxPayload, perMessageDeflate: false })
  // The TCP socket each client was upgraded from: ours, handed to us by Node's `upgrade` event.
  const transports = new WeakMap<WebSocket, Duplex>()
  app.server.on('upgrade', (request, socket, head) => {
    const path = (request.url ?? '').split('?', 1)[0]
    if (path !== options.path) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
      return
    }
    wss.handleUpgrade(request, socket, head, (client) => {
      transports.set(client, socket)
      wss.emit('connection', client, request)
    })
  })
  const authByConnection = new WeakMap<object, unknown>()
  const tracesByConnection = new WeakMap<object, { parent?: string; parentState?: string }>()
  // graphql-ws hands `execute` and `subscribe` only the execution arguments: their context leads back here.
  const ran = new WeakMap<object, Ran>()
  const formattedRefusals = new WeakMap<readonly GraphQLError[], readonly GraphQLFormattedError[]>()
  const shared = new SharedResults((result) => pipeline.format(result))
  if (options.registry) countShared(options.registry, shared)
  const server = useServer(
    {
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
        tracesByConnection.set(ctx, traceparentOfConnectionInit(ctx.connectionParams))
        return true
      },
      onSubscribe: async (ctx, id, payload) => {
        const auth = authByConnection.get(ctx)
        const socket = ctx.extra.socket
        // The socket's operations continue the trace its connection_init named, if any.
        const slot: SubscriptionSlot = { ...tracesByConnection.get(ctx) }
        const context = options.context(auth, (code, reason) => socket.close(code, reason), slot)
        const outcome = await pipeline.run(payload, context)
        if (outcome.kind === 'stream') {
          ran.set(outcome.args.contextValue as object, { outcome, socket, id, auth })
          return outcome.args
        }
        // Refused before it ran (no data at all): graphql-ws's `error` message, as the protocol asks,
        // carrying the errors as the pipeline formatted them (see onError).
        const { result, document } = outcome
        if (result.data === undefined || !document) {
          const refused = result.errors?.length ? result.errors : [{ message: 'Internal error.', extensions: { code: 'INTERNAL_SERVER_ERROR' } }]
          const errors = refused.map((error) => new GraphQLError(error.message))
          formattedRefusals.set(errors, refused)
          return errors
        }
        ran.set(context, { outcome, socket, id, auth })
        return { schema: pipeline.schema, document, operationName: payload.operationName ?? null, contextValue: context }
      },
      onError: (_ctx, _id, _payload, errors) => formattedRefusals.get(errors) as GraphQLFormattedError[] | undefined,
      // Answers come from the pipeline formatted and masked: written as they are.
      onNext: (_ctx, _id, _payload, _args, result) => result as FormattedExecutionResult,
      // The pipeline has run the query or mutation already: its answer is handed over as it is.
      execute: (args) => {
        const { outcome } = ran.get(args.contextValue as object) as Ran
        return (outcome as { result: FormattedExecutionResult }).result as never
      },
      subscribe: (args) => {
        const { outcome, socket, id, auth } = ran.get(args.contextValue as object) as Ran
        if (outcome.kind !== 'stream') return outcome.result as never
        const key = operationKey(outcome.args, auth)
        // A result is executed with a context of its own: loaders must not outlive one event.
        const executeShared = (event: unknown) => execute({ ...outcome.args, rootValue: event, contextValue: options.context(auth) })
        return sharedStream(outcome.source, {
          socket,
          transport: transports.get(socket),
          id,
          resultOf: (event) => shared.resultOf(key, event, executeShared),
          delivered: () => shared.countDelivery(),
          limit: options.subscriberBuffer,
          overflow: () => socket.close(SLOW_CONSUMER_CLOSE.code, SLOW_CONSUMER_CLOSE.reason),
        })
      },
    },
    wss,
  )
  app.addHook('preClose', async () => {
    await server.dispose()
  })
}
