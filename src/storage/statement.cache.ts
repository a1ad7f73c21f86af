import type { SQL } from 'drizzle-orm'
import { PgDialect } from 'drizzle-orm/pg-core'
import type { Db } from './database.client.js'

// Drizzle's own dialect, as `db.execute` builds with it (no casing is configured on our clients).
const dialect = new PgDialect()

/**
 * How many shapes one cache keeps: a filter's lists are written one placeholder per value, so a
 * shape counts their lengths, and a caller sending lists of ever new lengths must not grow it
 * without end. Past the bound the oldest shape is forgotten and built again when it returns.
 */
const SHAPES_MAX = 500

/**
 * Statement texts kept per shape: which criteria a read has, never their values. Building a text
 * through Drizzle walks every condition and escapes every name on every call; a shape met again
 * reuses the text and only binds the values, in the order {@link ShapedStatements.run}'s `params`
 * lists them.
 *
 * The values listed must be exactly those Drizzle binds, in its order. The first call of a shape
 * checks that against the statement Drizzle built: a shape whose values differ (the lister and
 * the builder disagree, a programming error) is never cached and always runs as built, so a
 * mistake costs speed, never a wrong answer. {@link ShapedStatements.mismatches} counts them for
 * the tests.
 */
export class ShapedStatements {
  private readonly texts = new Map<string, string>()
  private readonly refused = new Set<string>()
  /** Shapes whose listed values differed from Drizzle's (never cached). */
  mismatches = 0

  /**
   * Runs the statement of `shape`: from its kept text with `params()`, else built by `build()`.
   * The result is the driver's, as `db.execute` gives it (read it with `resultRows`).
   */
  run(db: Db, shape: string, build: () => SQL, params: () => unknown[]): Promise<unknown> {
    const text = this.texts.get(shape)
    if (text !== undefined) return execute(db, text, params())
    const query = dialect.sqlToQuery(build())
    if (!this.refused.has(shape)) {
      if (sameValues(query.params, params())) this.keep(shape, query.sql)
      else {
        this.mismatches += 1
        this.refused.add(shape)
      }
    }
    return execute(db, query.sql, query.params)
  }

  /** How many shapes are kept now. */
  get size(): number {
    return this.texts.size
  }

  private keep(shape: string, text: string): void {
    if (this.texts.size >= SHAPES_MAX) {
      const oldest = this.texts.keys().next()
      if (!oldest.done) this.texts.delete(oldest.value)
    }
    this.texts.set(shape, text)
  }
}

// The same path `db.execute` takes once the text is built, on either driver and inside a transaction.
function execute(db: Db, text: string, params: unknown[]): Promise<unknown> {
  return db._.session.prepareQuery({ sql: text, params }, undefined, undefined, false).execute()
}

function sameValues(built: readonly unknown[], listed: readonly unknown[]): boolean {
  if (built.length !== listed.length) return false
  return built.every((value, i) => Object.is(value, listed[i]))
}
