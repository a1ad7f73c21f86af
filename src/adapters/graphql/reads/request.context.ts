import type { DocumentNode, ExecutionArgs } from 'graphql'
import type { Config } from '../../../config/config.schema.js'
import type { Db } from '../../../storage/database.client.js'
import type { ActionRunner } from '../../../work/outbound/action.runner.js'
import type { EventHub } from '../../../work/realtime/event.hub.js'
import type { MetricsHistory } from '../../../work/graph/metrics.history.js'
import type { TaskListPoller } from '../../../work/graph/task-list.poller.js'
import type { WebhookService } from '../../../work/outbound/webhook.service.js'
import { allowedCodes, type Scope } from '../auth.scope.js'
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
  /** The realtime events of this process; what subscriptions read. */
  hub: EventHub | undefined
  /** The audience and health history (its samples' hub, the reconciliation's grace). */
  history: MetricsHistory | undefined
  /** Webhook endpoints and their deliveries; absent in a server built without them. */
  webhooks: WebhookService | undefined
  /** Ends this operation's websocket (subscriptions only). */
  closeSocket: ((code: number, reason: string) => void) | undefined
  /** What the caller's API key may read. */
  scope: Scope
  /** Acts on the cloud (`stopTask`, `sendMessage`); absent where nothing may act. */
  actions: ActionRunner | undefined
  /**
   * Present on a request that came over a socket, where a subscription may run: the request
   * pipeline leaves there the document it resolved and a subscription's source of events.
   */
  subscription: SubscriptionSlot | undefined
}

/** Where the request pipeline leaves what a socket needs of a request (request.pipeline.ts). */
export interface SubscriptionSlot {
  document?: DocumentNode
  stream?: { source: AsyncIterator<unknown>; args: ExecutionArgs }
  /** The `traceparent` (and `tracestate`) the socket's `connection_init` carried, which its operations continue. */
  parent?: string | undefined
  parentState?: string | undefined
  /** The trace the operation ran in, for its errors' `extensions.traceId`. */
  traceId?: string | undefined
}

/** What contexts are made from: the parts that live as long as the server. */
export interface ContextDeps {
  db: Db
  config: Config
  /** Absent when no service code has a `baseUrl`. */
  poller?: TaskListPoller | undefined
  hub?: EventHub | undefined
  history?: MetricsHistory | undefined
  actions?: ActionRunner | undefined
  webhooks?: WebhookService | undefined
}

/** A new context with its own loaders, for a caller already authenticated to `scope`. */
export function createContext(deps: ContextDeps, scope: Scope, closeSocket?: (code: number, reason: string) => void, subscription?: SubscriptionSlot): GraphqlContext {
  return {
    db: deps.db,
    config: deps.config,
    loaders: createLoaders(deps.db, allowedCodes(scope)),
    upstream: new UpstreamAccess(deps.poller, scope),
    hub: deps.hub,
    history: deps.history,
    webhooks: deps.webhooks,
    closeSocket,
    scope,
    subscription,
    actions: deps.actions,
  }
}
