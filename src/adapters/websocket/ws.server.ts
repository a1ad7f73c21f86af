import type { Duplex } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import {
  type ExecutionArgs,
  type ExecutionResult,
  type FormattedExecutionResult,
  GraphQLError,
  type GraphQLFormattedError,
  parse,
} from 'graphql'
import { useServer } from 'graphql-ws/use/ws'
import type { Registry } from 'prom-client'
import { type WebSocket, WebSocketServer } from 'ws'
import { countShared, operationKey, SharedResults } from './shared.results.js'
import { sharedStream } from './shared.stream.js'
import { closeFor } from '../../model/error.catalogue.js'
import type { GraphqlContext } from '../graphql/reads/request.context.js'
import { traceparentOfConnectionInit } from '../ops/operation.spans.js'
import type { PipelineOutcome, RequestPipeline, SocketTrace } from '../graphql/pipeline/request.pipeline.js'

/** The close code of a socket whose subscriber fell too far behind (see README, Realtime). */
export const SLOW_CONSUMER_CLOSE = closeFor('SUBSCRIBER_TOO_SLOW')

/** The close code of a socket whose `connection_init` carried no valid API key. */
export const UNAUTHORIZED_CLOSE = closeFor('UNAUTHORIZED')

/** What the websocket transport needs. */
export interface WebsocketOptions {
  /** The one request pipeline: every subscribe message runs through it. */
  pipeline: Pick<RequestPipeline, 'run' | 'schema'>
  path: string
  /**
   * Authenticates a socket from its `connection_init` payload: what `context` is then given,
   * or null to close the socket with 4401.
   */
  authenticate: (connectionParams: Readonly<Record<string, unknown>> | undefined) => unknown | null
  /** The GraphQL context of one operation, or of one event of a subscription. */
  context: (auth: unknown) => GraphqlContext
  /** Largest message a client may send. */
  maxPayload: number
  /** How many undelivered events one subscriber may have before it is cut off (4009). */
  subscriberBuffer: number
  /**
   * Where the shared results are counted (`livegate_subscription_results_total`,
   * `livegate_subscription_messages_total`).
   */
  registry?: Registry | undefined
}

/** Who is on a socket, known from its `connection_init` (graphql-ws keeps it in the connection's `extra`). */
interface Caller {
  auth: unknown
  trace: SocketTrace
}

// graphql-ws tells a query from a subscription by the document it is handed: an answered
// operation is handed this one, and its answer as the execution's result.
const ANSWERED = parse('query Answered { __typename }')

/**
 * An error as the pipeline formatted and masked it, for graphql-ws, which takes GraphQLErrors
 * and writes each as its `toJSON()`.
 */
class FormattedError extends GraphQLError {
  constructor(private readonly formatted: GraphQLFormattedError) {
    super(formatted.message)
  }

  override toJSON(): GraphQLFormattedError {
    return this.formatted
  }
}

const asExecutionResult = ({ errors, ...rest }: FormattedExecutionResult): ExecutionResult =>
  errors ? { ...rest, errors: errors.map((error) => new FormattedError(error)) } : rest

/**
 * What graphql-ws is handed to run for one operation: the pipeline's outcome, already decided.
 * It travels as the execution's context, the one value graphql-ws hands from `onSubscribe` to
 * `execute` and `subscribe`.
 */
class SocketOperation {
  constructor(
    readonly outcome: PipelineOutcome,
    readonly caller: Caller,
    /** The client's socket, the TCP socket it was upgraded from (see `nextWriter`), and the operation's id. */
    readonly socket: { client: WebSocket; transport: Duplex; id: string },
  ) {}

  static of(args: ExecutionArgs): SocketOperation {
    if (args.contextValue instanceof SocketOperation) return args.contextValue
    throw new Error('graphql-ws ran an operation the pipeline did not hand it')
  }
}

/**
 * The graphql-ws transport, on the gateway's own HTTP server, at the same path as queries. It
 * only translates: a subscribe message goes through the request pipeline as an HTTP request
 * does (so scope, trusted documents, limits, compiled execution, masking and metrics are the
 * same), and the outcome is written back: an answer as `next` and `complete` (a refusal, with no
 * data, as `error`), a subscription's events as they come. Sockets are closed with 1001
 * (`GOING_AWAY` in the catalogue) before the server stops taking connections.
 *
 * Subscriptions share their results: subscribers of the same operation (document, operation
 * name, the variables its execution reads, scope) get one execution and one serialized payload
 * per event (see {@link SharedResults}), written to their sockets by {@link sharedStream}.
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
  const server = useServer<Record<string, unknown>, { caller: Caller }>(
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
        // The socket's operations continue the trace its connection_init named, if any.
        ctx.extra.caller = { auth, trace: traceparentOfConnectionInit(ctx.connectionParams) }
        return true
      },
      onSubscribe: async (ctx, id, payload) => {
        const { socket, caller, request } = ctx.extra
        if (!caller) throw new Error('a subscribe message before the connection was acknowledged')
        const context = options.context(caller.auth)
        const outcome = await pipeline.run(payload, context, caller.trace)
        // Node hands the upgrade the request's own TCP socket, which `ws` then writes to.
        const target = { client: socket, transport: request.socket, id }
        if (outcome.kind === 'stream') {
          const { document, operationName } = outcome
          return {
            schema: pipeline.schema,
            document,
            operationName,
            contextValue: new SocketOperation(outcome, caller, target),
          }
        }
        // Refused before it ran (no data at all): graphql-ws's `error` message, as the protocol asks.
        const { result } = outcome
        if (result.data === undefined) {
          const refused = result.errors?.length
            ? result.errors
            : [{ message: 'Internal error.', extensions: { code: 'INTERNAL_SERVER_ERROR' } }]
          return refused.map((error) => new FormattedError(error))
        }
        return {
          schema: pipeline.schema,
          document: ANSWERED,
          contextValue: new SocketOperation(outcome, caller, target),
        }
      },
      // The pipeline has run the query or mutation already: its answer is written as it came,
      // formatted and masked (graphql-ws would write its fields in an order of its own).
      onNext: (_ctx, _id, _payload, args) => {
        const { outcome } = SocketOperation.of(args)
        return outcome.kind === 'answer' ? outcome.result : undefined
      },
      execute: (args) => {
        const { outcome } = SocketOperation.of(args)
        if (outcome.kind !== 'answer') throw new Error('a subscription was handed to execute')
        return asExecutionResult(outcome.result)
      },
      subscribe: (args) => {
        const { outcome, caller, socket: target } = SocketOperation.of(args)
        if (outcome.kind !== 'stream') return asExecutionResult(outcome.result)
        const socket = target.client
        const key = operationKey(outcome, caller.auth)
        // A result is executed with a context of its own: loaders must not outlive one event.
        const execute = (event: unknown) => outcome.execute(event, options.context(caller.auth))
        return sharedStream(outcome.source, {
          socket,
          transport: target.transport,
          id: target.id,
          resultOf: (event) => shared.resultOf(key, event, execute),
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
