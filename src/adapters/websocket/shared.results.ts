import {
  type ASTNode,
  type DocumentNode,
  type FormattedExecutionResult,
  getOperationAST,
  Kind,
  print,
  visit,
} from 'graphql'
import { Counter, type Registry } from 'prom-client'

/**
 * A `next` payload as it is computed: its bytes (the result's JSON and the message's closing
 * brace) at once, or, while its resolvers settle, a {@link PendingPayload} to wait on.
 */
export type SharedPayload = Buffer | PendingPayload

/**
 * A payload still being computed. Its waiters are told together, in the order they came, from
 * one promise reaction: thousands of subscribers of one operation each chaining a `then` would
 * cost a microtask apiece, and would write one by one between other promise jobs.
 */
export class PendingPayload {
  private waiters: Array<Waiter> = []
  private told: ((waiter: Waiter) => void) | undefined

  constructor(payload: Promise<Buffer>) {
    payload.then(
      (bytes) => this.settle((waiter) => waiter.ready(bytes)),
      (error: unknown) => this.settle((waiter) => waiter.failed(error)),
    )
  }

  /** Calls `ready` with the payload once it is computed (at once if it is), or `failed` if it cannot be. */
  wait(ready: (payload: Buffer) => void, failed: (error: unknown) => void): void {
    if (this.told) this.told({ ready, failed })
    else this.waiters.push({ ready, failed })
  }

  private settle(tell: (waiter: Waiter) => void): void {
    this.told = tell
    const waiters = this.waiters
    this.waiters = []
    for (const waiter of waiters) tell(waiter)
  }
}

interface Waiter {
  ready: (payload: Buffer) => void
  failed: (error: unknown) => void
}

/** The bytes of a `next` message's payload and the message's closing brace. */
const payloadBytes = (result: FormattedExecutionResult): Buffer => Buffer.from(`${JSON.stringify(result)}}`)

/**
 * An operation as subscribers share it: every subscriber whose {@link operationKey} is the same
 * text holds this same object (see {@link SharedResults.operation}), so telling whether two share is
 * one comparison of references, not of two texts (the operation's text and more) per subscriber
 * and event.
 */
export interface SharedOperationKey {
  readonly text: string
}

/** One event's result, formatted and masked: at once, or once its resolvers settle. */
export type EventResult = (event: unknown) => FormattedExecutionResult | Promise<FormattedExecutionResult>

/**
 * Subscription results, computed once per event per distinct operation and handed, as the same
 * bytes, to every subscriber of that operation.
 *
 * The rule: a result is shared under the key (event, operation). The operation is the text
 * {@link operationKey} makes, held as one object per text ({@link SharedResults.operation}): its
 * document, operation name, the variables its execution reads and the caller's scope;
 * subscribers that agree on all four compute the very same result, so the first to ask executes
 * it and the others wait for that. The event is the object a source hands
 * out: the hub hands one object per event to every subscriber of a filter (one node per committed
 * notification, one per task or action change), and a replay hands each subscriber objects of its
 * own, which are never shared. Results are kept in a WeakMap on the event: they go when it does.
 */
export class SharedResults {
  private readonly byEvent = new WeakMap<object, Map<SharedOperationKey, SharedPayload>>()
  // The hub hands an event to the subscribers of an operation one after another: the last
  // answer is the next one's too, found without a lookup. Only a computed payload is kept here.
  private last: { event: object; operation: SharedOperationKey; payload: Buffer } | undefined
  private readonly operations = new Map<string, WeakRef<SharedOperationKey>>()
  // An operation no subscriber holds any more leaves the table.
  private readonly unheld = new FinalizationRegistry<string>((text) => {
    if (this.operations.get(text)?.deref() === undefined) this.operations.delete(text)
  })
  private executed = 0
  private delivered = 0

  /** The one object of the operation whose key is `text`, for as long as a subscriber holds it. */
  operation(text: string): SharedOperationKey {
    const held = this.operations.get(text)?.deref()
    if (held) return held
    const made: SharedOperationKey = { text }
    this.operations.set(text, new WeakRef(made))
    this.unheld.register(made, text)
    return made
  }

  /** The payload of `event` for `operation`; `execute` runs only if none is known yet. */
  resultOf(operation: SharedOperationKey, event: unknown, execute: EventResult): SharedPayload {
    if (typeof event !== 'object' || event === null) return this.run(execute, event)
    const last = this.last
    if (last !== undefined && last.event === event && last.operation === operation) return last.payload
    let results = this.byEvent.get(event)
    if (!results) {
      results = new Map()
      this.byEvent.set(event, results)
    }
    const known = results.get(operation)
    if (known !== undefined) {
      if (!(known instanceof PendingPayload)) this.last = { event, operation, payload: known }
      return known
    }
    const payload = this.run(execute, event)
    results.set(operation, payload)
    if (payload instanceof PendingPayload) {
      const kept = results
      // Told before any subscriber: once settled, they read the bytes without waiting a turn; a failure is not kept.
      payload.wait(
        (bytes) => kept.set(operation, bytes),
        () => kept.delete(operation),
      )
    } else this.last = { event, operation, payload }
    return payload
  }

  /** Counts one message written to a subscriber. */
  countDelivery(): void {
    this.delivered++
  }

  /** How many results were executed, and how many messages written, since the server started. */
  get counts(): { executed: number; delivered: number } {
    return { executed: this.executed, delivered: this.delivered }
  }

  private run(execute: EventResult, event: unknown): SharedPayload {
    this.executed++
    const result = execute(event)
    return result instanceof Promise ? new PendingPayload(result.then(payloadBytes)) : payloadBytes(result)
  }
}

/**
 * What subscribers must agree on to share a result: the operation as sent, the variables its
 * execution reads, and who asks. Every subscription field resolves to its event as is (see
 * realtime.subscription.ts): its arguments choose the events, and are read by the subscriber's
 * own subscribe resolver, so variables used only there (a filter, an `after` cursor) do not
 * change a result, and a resumed subscriber shares with the others once its replay is done.
 */
export function operationKey(operation: SharedOperation, auth: unknown): string {
  const { document, operationName, variables } = operation
  const text = document.loc?.source.body ?? print(document)
  const read = [...executionVariables(document, operationName)].sort().map((name) => [name, variables[name]])
  return JSON.stringify([text, operationName, read, auth])
}

/** An operation as {@link operationKey} reads it. */
export interface SharedOperation {
  document: DocumentNode
  operationName: string | null
  variables: Record<string, unknown>
}

/** The variables an operation reads anywhere but in its root fields' arguments. */
function executionVariables(document: DocumentNode, operationName: string | null | undefined): Set<string> {
  const names = new Set<string>()
  const collect = (node: ASTNode) => visit(node, { Variable: (variable) => void names.add(variable.name.value) })
  const operation = getOperationAST(document, operationName)
  if (!operation) return names
  for (const directive of operation.directives ?? []) collect(directive)
  for (const selection of operation.selectionSet.selections) {
    if (selection.kind !== Kind.FIELD) {
      collect(selection)
      continue
    }
    for (const directive of selection.directives ?? []) collect(directive)
    if (selection.selectionSet) collect(selection.selectionSet)
  }
  for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) collect(definition)
  return names
}

/** Exports the counts of `shared` on `registry`, read at each scrape. */
export function countShared(registry: Registry, shared: SharedResults): void {
  // Read at scrape time: counting on the delivery path would cost each of thousands of writes.
  new Counter({
    name: 'livegate_subscription_results_total',
    help: 'Subscription results executed: one per event per distinct operation, not per subscriber.',
    registers: [registry],
    collect() {
      this.reset()
      this.inc(shared.counts.executed)
    },
  })
  new Counter({
    name: 'livegate_subscription_messages_total',
    help: 'Subscription events written to subscribers.',
    registers: [registry],
    collect() {
      this.reset()
      this.inc(shared.counts.delivered)
    },
  })
}
