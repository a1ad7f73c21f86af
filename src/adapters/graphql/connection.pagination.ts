import type { LogPosition } from '../../model/log.position.js'
import type { TaskKey } from '../../storage/graph/task.queries.js'
import { base64url } from './global.id.js'
import { badUserInput, isStorableTime } from './graphql.errors.js'

/**
 * Forward cursor pagination (Relay connections) for any list: validating `first` and `after`,
 * opaque cursors, and cutting a fetched page into edges and page info. The store fetches one row
 * more than the page size; that extra row only says whether another page follows.
 */

/** The arguments every connection field takes. */
export interface PageArgs {
  first?: number | null | undefined
  after?: string | null | undefined
}

/** The descriptions of every connection field's `first` and `after` arguments. */
export const PAGE_ARGUMENTS = {
  first: 'How many to return; the server sets the default and the largest allowed.',
  after: "A cursor from an earlier page (`pageInfo.endCursor` or an edge's `cursor`): return the items after it.",
} as const

/** `config.graphql`: the page size when `first` is not given, and the largest allowed. */
export interface PageSizeLimits {
  defaultPageSize: number
  maxPageSize: number
}

/** Turns a connection's sort key into an opaque cursor and back. */
export interface CursorCodec<K> {
  encode(key: K): string
  /** The key in a cursor this codec made; a GraphQL `BAD_USER_INPUT` error for anything else. */
  decode(cursor: string, argumentName?: string): K
}

/** What a connection field asks its store for, once its arguments are validated. */
export interface PageWindow<K> {
  /** How many edges the page holds at most. */
  size: number
  /** The sort key of the last edge the client has seen, when it gave `after`. */
  after: K | undefined
  /** How many rows to fetch: one more than `size`, to learn whether a next page exists. */
  fetch: number
}

/** A connection's value before GraphQL reads it; `countAll` runs only when `totalCount` is asked for. */
export interface ConnectionData<N> {
  edges: Array<{ cursor: string; node: N }>
  pageInfo: { hasNextPage: boolean; endCursor: string | null }
  countAll: () => Promise<number>
}

const CURSOR_SHAPE = /^[A-Za-z0-9_-]{1,200}$/
const ROW_ID = /^[1-9][0-9]{0,15}$/

/**
 * A cursor codec: the cursor is base64url of `<version>:<key text>`. The version names the
 * connection and the key's layout, so a cursor from another connection, or from an older
 * layout, is refused rather than misread.
 */
export function cursorCodec<K>(
  version: string,
  key: { toText(key: K): string; fromText(text: string): K | undefined },
): CursorCodec<K> {
  const prefix = `${version}:`
  return {
    encode: (value) => base64url(prefix + key.toText(value)),
    decode(cursor, argumentName = 'after') {
      const refuse = () =>
        badUserInput(
          `${argumentName} is not a cursor from this connection; pass an endCursor or edge cursor it returned.`,
          argumentName,
        )
      if (!CURSOR_SHAPE.test(cursor)) throw refuse()
      const bytes = Buffer.from(cursor, 'base64url')
      // Buffer decoding skips stray characters; only a canonical encoding is one we made.
      if (bytes.toString('base64url') !== cursor) throw refuse()
      const text = bytes.toString('utf8')
      if (!text.startsWith(prefix)) throw refuse()
      const value = key.fromText(text.slice(prefix.length))
      if (value === undefined) throw refuse()
      return value
    },
  }
}

/** A codec whose key is a positive row id (a `bigserial` read as a number). */
export function rowIdCursor(version: string): CursorCodec<number> {
  return cursorCodec<number>(version, {
    toText: (id) => String(id),
    fromText: (text) => (ROW_ID.test(text) && Number.isSafeInteger(Number(text)) ? Number(text) : undefined),
  })
}

const POSITION_TEXT = /^(0|[1-9]\d{0,19}):(0|[1-9]\d{0,15})$/

/**
 * A codec whose key is a place in the callback log: the writing transaction and the row id. One
 * codec for every list of notifications and for subscriptions, so any cursor resumes anywhere.
 */
export function logPositionCursor(version: string): CursorCodec<LogPosition> {
  return cursorCodec<LogPosition>(version, {
    toText: (position) => `${position.xid}:${position.id}`,
    fromText: (text) => {
      const match = POSITION_TEXT.exec(text)
      if (!match || !Number.isSafeInteger(Number(match[2]))) return undefined
      return { xid: match[1] as string, id: Number(match[2]) }
    },
  })
}

const TIME_KEY_TEXT = /^(\d{1,15}):([1-9]\d{0,15})$/

/**
 * A codec whose key is a sort time (epoch milliseconds) and a row id, newest first: tasks and
 * recordings. A time outside the years 1 to 9999 is no cursor it made: compared with stored rows
 * it would be the database's error, not the caller's.
 */
export function timeIdCursor(version: string): CursorCodec<{ sortAt: number; id: number }> {
  return cursorCodec(version, {
    toText: (key) => `${key.sortAt}:${key.id}`,
    fromText: (text) => {
      const match = TIME_KEY_TEXT.exec(text)
      if (!match) return undefined
      const key = { sortAt: Number(match[1]), id: Number(match[2]) }
      return isStorableTime(key.sortAt) && Number.isSafeInteger(key.id) ? key : undefined
    },
  })
}

/** A task's place in the newest-first order of `tasks`: its sort time and row id. */
export const taskCursor: CursorCodec<TaskKey> = timeIdCursor('t1')

/** The page size for `first`: the default when absent; a `BAD_USER_INPUT` error when out of range. */
export function pageSize(first: number | null | undefined, limits: PageSizeLimits): number {
  if (first === null || first === undefined) return Math.min(limits.defaultPageSize, limits.maxPageSize)
  if (!Number.isInteger(first) || first < 0)
    throw badUserInput(`first must be a whole number from 0 to ${limits.maxPageSize}; got ${first}.`, 'first')
  if (first > limits.maxPageSize)
    throw badUserInput(
      `first may be at most ${limits.maxPageSize}; got ${first}. Page on with after: pageInfo.endCursor.`,
      'first',
    )
  return first
}

/** Validates a connection field's `first` and `after` into what its store should fetch. */
export function pageWindow<K>(args: PageArgs, limits: PageSizeLimits, codec: CursorCodec<K>): PageWindow<K> {
  const size = pageSize(args.first, limits)
  const after = args.after === null || args.after === undefined ? undefined : codec.decode(args.after, 'after')
  return { size, after, fetch: size + 1 }
}

/**
 * Cuts fetched rows (up to `window.fetch` of them, in connection order) into a connection.
 * `keyOf` gives a row's sort key for its cursor, `toNode` what the edge's node resolves from.
 */
export function toConnection<R, K, N>(
  rows: readonly R[],
  window: Pick<PageWindow<K>, 'size'>,
  parts: {
    codec: CursorCodec<K>
    keyOf: (row: R) => K
    toNode: (row: R, cursor: string) => N
    countAll: () => Promise<number>
  },
): ConnectionData<N> {
  const page = rows.slice(0, window.size)
  // A cursor is encoded when it is read: most documents ask for nodes alone. A toNode that takes
  // the cursor gets it.
  const eager = parts.toNode.length > 1
  const edges = page.map((row) => {
    const edge = new LazyEdge<R, K, N>(row, parts)
    edge.node = parts.toNode(row, eager ? edge.cursor : '')
    return edge
  })
  const last = edges.at(-1)
  return {
    edges,
    pageInfo: new LazyPageInfo(rows.length > window.size, last),
    countAll: parts.countAll,
  }
}

/** An edge whose cursor is encoded on first read (on the prototype: no closure per edge). */
class LazyEdge<R, K, N> {
  node!: N
  #cursor: string | undefined
  constructor(
    private readonly row: R,
    private readonly parts: { codec: CursorCodec<K>; keyOf: (row: R) => K },
  ) {}
  get cursor(): string {
    if (this.#cursor === undefined) this.#cursor = this.parts.codec.encode(this.parts.keyOf(this.row))
    return this.#cursor
  }
}

/** Page info whose end cursor is the last edge's, read when asked. */
class LazyPageInfo {
  constructor(
    readonly hasNextPage: boolean,
    private readonly last: { cursor: string } | undefined,
  ) {}
  get endCursor(): string | null {
    return this.last?.cursor ?? null
  }
}
