import {
  type DocumentNode,
  type ExecutionResult,
  type FormattedExecutionResult,
  GraphQLError,
  type GraphQLFormattedError,
} from 'graphql'
import type { GraphqlContext } from '../reads/request.context.js'

/**
 * An error as the core formatted and masked it, for whoever takes GraphQLErrors and writes each
 * as its `toJSON()` (graphql-ws): it writes the formatted error as it is.
 */
export class FormattedError extends GraphQLError {
  constructor(readonly formatted: GraphQLFormattedError) {
    super(formatted.message)
  }

  override toJSON(): GraphQLFormattedError {
    return this.formatted
  }
}

/** A formatted result as an `ExecutionResult` whose errors write themselves as formatted (keys in their order). */
export function asExecutionResult({ errors, ...rest }: FormattedExecutionResult): ExecutionResult {
  return errors ? { ...rest, errors: errors.map((error) => new FormattedError(error)) } : rest
}

/** One event's result: the operation executed with the event as its root, formatted and masked. */
export type EventExecute = (
  event: unknown,
  context: GraphqlContext,
) => FormattedExecutionResult | Promise<FormattedExecutionResult>

/**
 * A started subscription, as the core hands it to a transport: the stream of its results, which
 * any GraphQL-over-websocket server can iterate (each event executed in a context of its own:
 * loaders must not outlive one event), and the parts a transport that shares one result per event
 * among many subscribers reads instead (graphql-ws's adapter, ws.server.ts): the source of events
 * (the hub's subscription, work/realtime), the operation that says who may share, and the
 * execution of one event.
 */
export class SubscriptionStream implements AsyncIterableIterator<ExecutionResult> {
  constructor(
    /** The events, as the subscribe resolver's source hands them (the hub's queue or direct hand-over). */
    readonly source: AsyncIterator<unknown>,
    /** The operation as admitted: with the caller's scope, what says which subscribers share a result. */
    readonly document: DocumentNode,
    readonly operationName: string | null,
    readonly variables: Record<string, unknown>,
    /** The caller's scope, the last part of what subscribers must agree on to share a result. */
    readonly scope: GraphqlContext['scope'],
    private readonly run: EventExecute,
    /** A fresh context for one event's execution. */
    readonly eventContext: () => GraphqlContext,
  ) {}

  /** One event's result, in `context` (a fresh one by default). */
  execute(event: unknown, context: GraphqlContext = this.eventContext()) {
    return this.run(event, context)
  }

  async next(): Promise<IteratorResult<ExecutionResult>> {
    const step = await this.source.next()
    if (step.done) return { done: true, value: undefined }
    return { done: false, value: asExecutionResult(await this.execute(step.value)) }
  }

  async return(): Promise<IteratorResult<ExecutionResult>> {
    await this.source.return?.()
    return { done: true, value: undefined }
  }

  async throw(error: unknown): Promise<IteratorResult<ExecutionResult>> {
    await this.source.return?.()
    throw error
  }

  [Symbol.asyncIterator](): this {
    return this
  }
}
