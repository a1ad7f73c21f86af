import type { Config } from '../../../config/config.schema.js'
import type { Db } from '../../../storage/database.client.js'
import type { ActionRunner } from '../../../work/outbound/action.runner.js'
import type { EventHub } from '../../../work/realtime/event.hub.js'
import type { AudienceHistory } from '../../../work/graph/audience.history.js'
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
  history: AudienceHistory | undefined
  /** Webhook endpoints and their deliveries; absent in a server built without them. */
  webhooks: WebhookService | undefined
  /** What the caller's API key may read. */
  scope: Scope
  /** Acts on the cloud (`stopTask`, `sendMessage`); absent where nothing may act. */
  actions: ActionRunner | undefined
  /** What brought the request: HTTP, or a graphql-ws socket (where subscriptions are served). */
  transport: 'http' | 'ws'
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
  hub?: EventHub | undefined
  history?: AudienceHistory | undefined
  actions?: ActionRunner | undefined
  webhooks?: WebhookService | undefined
}

/** A new context with its own loaders, for a caller already authenticated to `scope`. */
export function createContext(
  deps: ContextDeps,
  scope: Scope,
  transport: 'http' | 'ws' = 'http',
  trace?: GraphqlContext['trace'],
): GraphqlContext {
  return {
    db: deps.db,
    config: deps.config,
    loaders: createLoaders(deps.db, allowedCodes(scope)),
    upstream: new UpstreamAccess(deps.poller, scope),
    hub: deps.hub,
    history: deps.history,
    webhooks: deps.webhooks,
    scope,
    transport,
    actions: deps.actions,
    ...(trace ? { trace } : {}),
  }
}
