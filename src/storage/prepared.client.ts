import type { Sql } from 'postgres'

/**
 * How many distinct statement texts one pool prepares at most. postgres.js keeps a prepared
 * statement per connection and text for the connection's life (it never deallocates), and so
 * does the server: the bound keeps a stream of texts that only look alike (a list of ids written
 * as one placeholder each, a filter's combinations) from growing either without end. The reads a
 * page runs are a few dozen texts.
 */
export const PREPARED_TEXTS_MAX = 500

// A text seen once may never come again (a statement with its values written into its text); the
// seen-once set is forgotten whenever it holds this many texts or characters.
const SEEN_ONCE_MAX = 2000
const SEEN_ONCE_CHARS_MAX = 4 * 1024 * 1024

// A longer text is not remembered at all: it carries values (a long list written into it). A task
// page that writes its parts as JSON text is about 20 kB of SQL, the same for every request of a
// document, and parsing and planning it is what preparing saves most.
const TEXT_LENGTH_MAX = 64 * 1024

type Unsafe = Sql['unsafe']
type UnsafeOptions = NonNullable<Parameters<Unsafe>[2]>

/**
 * Makes every statement with parameters that a pool runs more than once a named prepared
 * statement: parsed once per connection, then only bound and executed, in one round trip (an
 * unnamed statement with parameters costs postgres.js two: a describe first, then the execution).
 * Drizzle's postgres-js driver sends through `unsafe`, whose default is unnamed; a statement
 * without parameters keeps the simple protocol (its values are in its text). The server keeps
 * choosing between custom and generic plans as it does for any prepared statement
 * (`plan_cache_mode`), so a plan that depends on the values is planned for them.
 *
 * A URL with `?prepare=false` (a pooler in transaction mode, which cannot keep a connection's
 * statements) turns preparing off for the whole pool: postgres.js's own option wins.
 * Transactions opened with `begin`, and their savepoints, prepare the same way.
 */
export function preparing<T extends Sql>(client: T, texts: PreparedTexts = new PreparedTexts()): T {
  const unsafe = client.unsafe.bind(client) as Unsafe
  client.unsafe = ((query: string, args?: unknown, options?: UnsafeOptions) => {
    const params = Array.isArray(args) ? args : []
    const given = Array.isArray(args) ? options : (args as UnsafeOptions | undefined)
    if (given?.prepare || params.length === 0 || !texts.prepare(query)) return unsafe(query, params as never, given)
    return unsafe(query, params as never, { ...given, prepare: true })
  }) as Unsafe
  wrapTransactions(client, texts)
  return client
}

/**
 * Sends a statement of the pool only on a connection with nothing else in flight. Unprepared, a
 * statement with parameters is described first (Parse, Describe, Flush: no Sync); pipelined behind
 * another statement, its answer comes after that one's ReadyForQuery, where a pooler in
 * transaction mode has handed the server connection back: the answer is dropped and the connection
 * hangs. A statement's `onexecute` answering false keeps postgres.js from sending the next one
 * behind it (its `max_pipeline: 0` would, but also stops `begin` from reserving its connection).
 * Inside a transaction the server reports one (`T`), so the pooler keeps the connection: that
 * pipeline is left alone.
 */
export function unpipelined<T extends Sql>(client: T): T {
  const unsafe = client.unsafe.bind(client) as Unsafe
  client.unsafe = ((query: string, args?: unknown, options?: UnsafeOptions) => {
    const params = Array.isArray(args) ? args : []
    const given = Array.isArray(args) ? options : (args as UnsafeOptions | undefined)
    // `begin` sends its own through here: it reserves the connection, which keeps the rest off it too.
    return unsafe(query, params as never, { onexecute: () => false, ...given } as UnsafeOptions)
  }) as Unsafe
  return client
}

// drizzle's transaction runs its statements on the client postgres.js hands `begin`'s callback
// (and `savepoint`'s): a pool of its own making, not the one wrapped above.
function wrapTransactions(client: Sql, texts: PreparedTexts): void {
  const withClient = (method: 'begin' | 'savepoint') => {
    const target = client as unknown as Record<string, unknown>
    const original = target[method]
    if (typeof original !== 'function') return
    target[method] = (...args: unknown[]) => {
      const last = args.length - 1
      const fn = args[last]
      if (typeof fn === 'function') args[last] = (tx: Sql) => fn(preparing(tx, texts))
      return (original as (...a: unknown[]) => unknown).apply(client, args)
    }
  }
  withClient('begin')
  withClient('savepoint')
}

/** Which texts a pool prepares: those met a second time, up to {@link PREPARED_TEXTS_MAX}. */
export class PreparedTexts {
  private readonly prepared = new Set<string>()
  private seenOnce = new Set<string>()
  private seenOnceChars = 0

  prepare(text: string): boolean {
    if (text.length > TEXT_LENGTH_MAX) return false
    if (this.prepared.has(text)) return true
    if (!this.seenOnce.has(text)) {
      if (this.seenOnce.size >= SEEN_ONCE_MAX || this.seenOnceChars + text.length > SEEN_ONCE_CHARS_MAX) {
        this.seenOnce = new Set()
        this.seenOnceChars = 0
      }
      this.seenOnce.add(text)
      this.seenOnceChars += text.length
      return false
    }
    if (this.prepared.size >= PREPARED_TEXTS_MAX) return false
    this.seenOnce.delete(text)
    this.seenOnceChars -= text.length
    this.prepared.add(text)
    return true
  }

  get size(): number {
    return this.prepared.size
  }
}
