import { badUserInput } from './graphql.errors.js'

/**
 * Global ids of the `Node` types: opaque to clients, made of each node's natural key (never of
 * a row id that a rebuilt table would renumber), so an id stays the same across restarts and on
 * every instance. The text is base64url of `<type>:<JSON array of the key's parts>`.
 */

/** The node types and the number of parts of their keys. */
const KEY_PARTS = { Task: 2, User: 2, Output: 3, Notification: 1, Action: 1, Incident: 1, Recording: 2 } as const

/** A type that implements `Node`. */
export type NodeTypeName = keyof typeof KEY_PARTS

/** A decoded global id: its type and the parts of its key (text; a notification's and an action's is its row id). */
export interface GlobalId {
  type: NodeTypeName
  key: string[]
}

// No bound on an id's length here: an id is as long as its key (a recording's file name, a task
// id), which the database holds at any length, and every id handed out must be taken back (an
// 800-character file name made a 2,174-character id, refused). The request's body limit bounds
// what a client can make us decode, and decoding is linear in it.
const ID_SHAPE = /^[A-Za-z0-9_-]+$/
const ROW_ID = /^[1-9][0-9]{0,15}$/

/** The global id of a node of `type` with this key. */
export function toGlobalId(type: NodeTypeName, ...key: Array<string | number>): string {
  return base64url(`${type}:${JSON.stringify(key.map(String))}`)
}

// A page writes about 750 ids and cursors; Buffer.from allocated a Buffer for each, more than
// its encoding cost. Encoding runs to its end before anything else can use the scratch bytes.
const scratch = Buffer.allocUnsafe(4096)

/** base64url of a text's UTF-8 bytes. */
export function base64url(text: string): string {
  // A UTF-16 unit is at most 3 bytes of UTF-8 (a pair of them, 4).
  if (text.length * 3 > scratch.length) return Buffer.from(text, 'utf8').toString('base64url')
  return scratch.toString('base64url', 0, scratch.write(text, 0, 'utf8'))
}

/** The type and key of a global id, or undefined when it is not one this schema made. */
export function parseGlobalId(id: string): GlobalId | undefined {
  if (!ID_SHAPE.test(id)) return undefined
  const bytes = Buffer.from(id, 'base64url')
  // Buffer decoding skips stray characters; only the canonical encoding is one we made.
  if (bytes.toString('base64url') !== id) return undefined
  const text = bytes.toString('utf8')
  const colon = text.indexOf(':')
  const type = text.slice(0, colon)
  if (colon < 0 || !Object.hasOwn(KEY_PARTS, type)) return undefined
  let key: unknown
  try {
    key = JSON.parse(text.slice(colon + 1))
  } catch {
    return undefined
  }
  const parts = KEY_PARTS[type as NodeTypeName]
  if (
    !Array.isArray(key) ||
    key.length !== parts ||
    !key.every((part) => typeof part === 'string' && !part.includes('\u0000'))
  )
    return undefined
  if (
    (type === 'Notification' || type === 'Action' || type === 'Incident') &&
    !(ROW_ID.test(key[0] as string) && Number.isSafeInteger(Number(key[0])))
  )
    return undefined
  return { type: type as NodeTypeName, key: key as string[] }
}

/**
 * The global id in an argument, of one of `types` when given; a `BAD_USER_INPUT` error for
 * anything else (a malformed id can never name a node, and saying so beats a silent null).
 * `label` names the place in the argument, such as `filter.ids`.
 */
export function requireGlobalId(
  id: string,
  argumentName: string,
  types?: readonly NodeTypeName[],
  label = argumentName,
): GlobalId {
  const parsed = parseGlobalId(id)
  if (!parsed)
    throw badUserInput(`${label} is not an id from this API; pass the \`id\` of a node it returned.`, argumentName)
  if (types && !types.includes(parsed.type))
    throw badUserInput(`${label} holds the id of a ${parsed.type}, not of a ${types.join(' or ')}.`, argumentName)
  return parsed
}
