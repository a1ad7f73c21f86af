import type { Config } from '../../../config/config.schema.js'
import type { Db } from '../../../storage/database.client.js'
import type { ActionRunner } from '../../../work/outbound/action.runner.js'
import type { RealtimeEngine } from '../../../work/realtime/realtime.engine.js'
import type { StreamFilter, StreamItem, StreamKind } from '../../../work/realtime/stream.table.js'
import type { SubscriptionQueue } from '../../../work/realtime/subscription.queue.js'
import { graphqlError } from '../graphql.errors.js'
import type { AudienceHistory } from '../../../work/graph/audience.history.js'
import type { TaskListPoller } from '../../../work/graph/task-list.poller.js'
import type { WebhookService } from '../../../work/outbound/webhook.service.js'
import type { ReadTarget, ReplicaRouter } from '../../../work/replica.router.js'
import { allowedCodes, allowedUser, type Scope } from '../auth.scope.js'
import { type Loaders, createLoaders } from './loaders.create.js'
import { UpstreamAccess } from './upstream.access.js'

/** What every resolver is given as `@Ctx()`: made fresh for each request (or subscription operation). */
export interface GraphqlContext {
  db: Db
  config: Config
  /** This request's DataLoaders; never shared between requests. */
  loaders: Loaders
  /** Which polled codes this request read, for the stale report. */
  upstream: UpstreamAccess
  /** The realtime engine of this process: what every subscription reads, through {@link subscribeTo}. */
  hub: RealtimeEngine | undefined
  /** The audience and health history (the reconciliation's grace). */
  history: AudienceHistory | undefined
  /** Webhook endpoints and their deliveries; absent in a server built without them. */
  webhooks: WebhookService | undefined
  /** What the caller's API key may read. */
  scope: Scope
  /** Acts on the cloud (`stopTask`, `sendMessage`); absent where nothing may act. */
  actions: ActionRunner | undefined
  /** What brought the request: HTTP, or a graphql-ws socket (where subscriptions are served). */
  transport: 'http' | 'ws'
  /** Routes reads to replicas; {@link readOnPrimary} moves a mutation's context to the primary. */
  reads?: ReplicaRouter | undefined
  /**
   * The W3C trace a graphql-ws socket's operations continue (its `connection_init`'s
   * `traceparent` and `tracestate`); over HTTP the active context is the request's.
   */
  trace?: { parent?: string | undefined; parentState?: string | undefined } | undefined
}

/** What contexts are made from: the parts that live as long as the server. */
export interface ContextDeps {
  db: Db
  config: Config
  /** Absent when no service code has a `baseUrl`. */
  poller?: TaskListPoller | undefined
  hub?: RealtimeEngine | undefined
  history?: AudienceHistory | undefined
  actions?: ActionRunner | undefined
  webhooks?: WebhookService | undefined
  /** Streaming replicas for reads (`database.readUrls`); without them, `db` serves everything. */
  reads?: ReplicaRouter | undefined
}

/** A new context with its own loaders, for a caller already authenticated to `scope`. */
export function createContext(
  deps: ContextDeps,
  scope: Scope,
  transport: 'http' | 'ws' = 'http',
  trace?: GraphqlContext['trace'],
): GraphqlContext {
  // A request reads from a replica that keeps up, else the primary; a mutation moves to the
  // primary once the pipeline knows it is one (readOnPrimary).
  const read = deps.reads?.routing ? deps.reads.choose() : undefined
  const db = read?.db ?? deps.db
  const upstream = new UpstreamAccess(deps.poller, scope)
  upstream.readFrom = read
  return {
    db,
    config: deps.config,
    loaders: createLoaders(db, allowedCodes(scope), allowedUser(scope)),
    upstream,
    ...(deps.reads?.routing ? { reads: deps.reads } : {}),
    hub: deps.hub,
    history: deps.history,
    webhooks: deps.webhooks,
    scope,
    transport,
    actions: deps.actions,
    ...(trace ? { trace } : {}),
  }
}

/**
 * Moves a context to the primary: a mutation writes there, and what it answers is read there, so
 * the caller sees its own write. Nothing changes without replicas.
 */
export function readOnPrimary(context: GraphqlContext): void {
  if (!context.reads || context.upstream.readFrom?.target === 'primary') return
  readFrom(context, context.reads.primary())
}

/**
 * Moves a query's context to a database that has replayed at least up to `position` (the WAL
 * location an earlier answer named, `extensions.position`: a mutation's, or the page a cursor came
 * from), so the caller never reads something older than what it was already answered: a replica
 * only once it has caught up, else the primary.
 */
export function readAfter(context: GraphqlContext, position: unknown): void {
  if (!context.reads || typeof position !== 'string' || context.upstream.readFrom?.target === 'primary') return
  readFrom(context, context.reads.choose(position))
}

function readFrom(context: GraphqlContext, target: ReadTarget): void {
  context.db = target.db
  context.loaders = createLoaders(target.db, allowedCodes(context.scope))
  context.upstream.readFrom = target
}

/**
 * Runs one query or mutation on the database its kind and its named position call for; its answer
 * then names where that database stood after it (`extensions.position`): the primary's WAL after a
 * mutation, the replica's replay (or the primary's WAL) after a query. A client names it as
 * `readAfter` with what it asks next (the next page of a cursor, a subscription), and is never
 * answered from older data than it saw. Asked after the read, so it is at or past all the read saw.
 */
export async function routedOperation<R>(
  context: GraphqlContext,
  kind: 'query' | 'mutation' | 'subscription' | undefined,
  extensions: Record<string, unknown> | null | undefined,
  run: () => Promise<R>,
): Promise<R> {
  const reads = context.reads
  if (!reads) return run()
  if (kind === 'mutation') readOnPrimary(context)
  else readAfter(context, extensions?.readAfter)
  const result = await run()
  // A subscription's answers are its events: its position is its cursor in the log.
  if (kind !== 'subscription') context.upstream.position = await reads.position(context.db).catch(() => undefined)
  return result
}

/** The engine a subscription reads; none is given to HTTP requests, which subscriptions are not served on. */
export function liveEngine(context: GraphqlContext): RealtimeEngine {
  if (!context.hub)
    throw graphqlError('BAD_REQUEST', 'Subscriptions are served over websockets (graphql-ws) at /graphql.')
  return context.hub
}

/**
 * What every `@Subscription`'s `subscribe` does: joins the engine's stream of `kind` with the
 * filter made from the caller's scope. The queue is read by the websocket transport
 * (`adapters/websocket/shared.stream.ts`), which writes each item to the subscriber's socket.
 */
export function subscribeTo<K extends StreamKind>(
  context: GraphqlContext,
  kind: K,
  filter: (scope: Scope) => StreamFilter<K>,
): SubscriptionQueue<StreamItem<K>> {
  return liveEngine(context).subscribe(kind, filter(context.scope))
}
