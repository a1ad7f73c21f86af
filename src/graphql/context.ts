import type { Config } from '../config/config.schema.js'
import type { Db } from '../db/database.client.js'
import { type Loaders, createLoaders } from './loaders.create.js'

/** What every resolver is given as `@Ctx()`: made fresh for each request (or subscription operation). */
export interface GraphqlContext {
  db: Db
  config: Config
  /** This request's DataLoaders; never shared between requests. */
  loaders: Loaders
}

/** What contexts are made from: the parts that live as long as the server. */
export interface ContextDeps {
  db: Db
  config: Config
}

/** A new context with its own loaders. */
export function createContext(deps: ContextDeps): GraphqlContext {
  return { db: deps.db, config: deps.config, loaders: createLoaders(deps.db) }
}
