import type { Config } from '../config/config.schema.js'
import type { Db } from '../db/database.client.js'
import type { EventHub } from '../realtime/event.hub.js'
import type { TaskListPoller } from '../upstream/task-list.poller.js'
import { type Loaders, createLoaders } from './loaders.create.js'
import { UpstreamAccess } from './upstream.access.js'

/** What every resolver is given as `@Ctx()`: made fresh for each request (or subscription operation). */
export interface GraphqlContext {
  db: Db
  config: Config
  /** This request's DataLoaders; never shared between requests. */
  loaders: Loaders
  /** The live task_list for this request, and what failed of it. */
  upstream: UpstreamAccess
  /** The realtime events of this process; what subscriptions read. */
  hub: EventHub | undefined
  /** Ends this operation's websocket (subscriptions only). */
  closeSocket: ((code: number, reason: string) => void) | undefined
}

/** What contexts are made from: the parts that live as long as the server. */
export interface ContextDeps {
  db: Db
  config: Config
  /** Absent when no service code has a `baseUrl`. */
  poller?: TaskListPoller | undefined
  hub?: EventHub | undefined
}

/** A new context with its own loaders. */
export function createContext(deps: ContextDeps, closeSocket?: (code: number, reason: string) => void): GraphqlContext {
  return {
    db: deps.db,
    config: deps.config,
    loaders: createLoaders(deps.db),
    upstream: new UpstreamAccess(deps.poller),
    hub: deps.hub,
    closeSocket,
  }
}
