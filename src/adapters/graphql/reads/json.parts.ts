import { randomUUID } from 'node:crypto'
import { type FieldNode, GraphQLInt, type GraphQLResolveInfo, type ValueNode, valueFromAST } from 'graphql'
import { needsObjectPath } from '../../../storage/graph/task.json.js'
import type { TaskJsonRead, TaskListRow } from '../../../storage/graph/task.queries.js'
import { type PageSizeLimits, pageSize } from '../connection.pagination.js'

/**
 * The answer side of a task page's parts written by PostgreSQL as JSON text (task.json.ts): the
 * document is rewritten (json.rewrite.ts) so each such part is a placeholder field whose value is
 * a short marker string; the answer is serialized as usual, then each marker is replaced by its
 * text ({@link spliceJsonTexts}). JSON.rawJSON would write the text itself, but it takes only
 * primitives, and these parts are arrays.
 */

/** The placeholder field a part becomes; `part` is its place in the `tasks` field's {@link TaskJsonRead}. */
export const JSON_TEXT_FIELD = '_livegateJsonText'

/** What one request's execution gathered: the texts its markers stand for. */
interface RequestTexts {
  nonce: string
  texts: string[]
  /**
   * A text could not be used (a value the object path refuses, a node not stored): the request is run again the object
   * way.
   */
  fallback: boolean
}

const byContext = new WeakMap<object, RequestTexts>()
const textsOfNode = new WeakMap<object, ReadonlyArray<string | null>>()
/** What a rewritten `tasks` field reads as text: the parts, and the `first` of each notifications part. */
export interface JsonPlan {
  read: TaskJsonRead
  firsts: ReadonlyMap<number, ValueNode | undefined>
}

const planOfField = new WeakMap<FieldNode, JsonPlan>()
const TEXTS = Symbol('livegate.jsonTexts')

/** Marks the rewritten `tasks` field node with the parts its page reads as text. */
export function setJsonPlan(field: FieldNode, plan: JsonPlan): void {
  planOfField.set(field, plan)
}

/**
 * The parts a `tasks` field reads as text, with this request's variables: none unless its
 * document was rewritten for them. A notifications part whose `first` the object path would
 * refuse is not read (its placeholder then hands the request to the object path, which refuses it).
 */
export function jsonReadOf(
  info: Pick<GraphQLResolveInfo, 'fieldNodes' | 'variableValues'>,
  limits: PageSizeLimits,
): TaskJsonRead | undefined {
  const plan = info.fieldNodes.length === 1 ? planOfField.get(info.fieldNodes[0] as FieldNode) : undefined
  if (!plan || plan.firsts.size === 0) return plan?.read
  const parts = plan.read.parts.map((part, i) => {
    if (part.kind !== 'notifications') return part
    const given = plan.firsts.get(i)
    const first = given ? valueFromAST(given, GraphQLInt, info.variableValues) : null
    if (first === undefined) return part
    try {
      return { ...part, perTask: pageSize(first as number | null, limits) }
    } catch {
      return part
    }
  })
  return { ...plan.read, parts }
}

/** Keeps a page row's texts with the task node it resolves as. */
export function keepJsonTexts(row: TaskListRow, node: object, read: TaskJsonRead | undefined): void {
  if (!read) return
  textsOfNode.set(
    node,
    read.parts.map((_, i) => row[`json${i}`] ?? null),
  )
}

/** Starts gathering texts for one execution of a rewritten document. */
export function beginJsonTexts(context: object): void {
  byContext.set(context, { nonce: randomUUID(), texts: [], fallback: false })
}

/**
 * Ends it: whether the object path must answer instead; else the texts go with the answer's
 * `data` (a symbol key, which JSON.stringify does not write) for {@link spliceJsonTexts}.
 */
export function endJsonTexts(context: object, data: unknown): 'fallback' | 'done' {
  const gathered = byContext.get(context)
  byContext.delete(context)
  if (!gathered) return 'done'
  if (gathered.fallback) return 'fallback'
  if (gathered.texts.length > 0 && data && typeof data === 'object')
    Object.defineProperty(data, TEXTS, { value: gathered, enumerable: false })
  return 'done'
}

/** The placeholder field's resolver: the marker of the part's text. */
export function jsonTextMarker(source: unknown, args: { part: number }, context: unknown): string | null {
  const gathered = byContext.get(context as object)
  const text = textsOfNode.get(source as object)?.[args.part] ?? null
  if (!gathered) return null
  if (needsObjectPath(text)) {
    gathered.fallback = true
    return null
  }
  const index = gathered.texts.push(text as string) - 1
  return `\u0000lgjson:${gathered.nonce}:${index}`
}

/** An answer as JSON text, each marker replaced by its text: byte for byte what the object path writes. */
export function stringifyWithJsonTexts(result: { data?: unknown }): string {
  const json = JSON.stringify(result)
  const gathered =
    result.data && typeof result.data === 'object'
      ? ((result.data as Record<symbol, RequestTexts | undefined>)[TEXTS] ?? undefined)
      : undefined
  return gathered ? spliceJsonTexts(json, gathered) : json
}

/** For a transport that serializes the answer itself: the same answer with plain values where the markers are. */
export function withJsonTextsParsed<T extends { data?: unknown }>(result: T): T {
  const gathered =
    result.data && typeof result.data === 'object'
      ? (result.data as Record<symbol, RequestTexts | undefined>)[TEXTS]
      : undefined
  if (!gathered) return result
  return { ...result, data: JSON.parse(spliceJsonTexts(JSON.stringify(result.data), gathered)) }
}

function spliceJsonTexts(json: string, gathered: RequestTexts): string {
  // A marker as JSON.stringify writes it: NUL is escaped, which no stored text can hold.
  const prefix = `"\\u0000lgjson:${gathered.nonce}:`
  let at = json.indexOf(prefix)
  if (at < 0) return json
  let out = ''
  let from = 0
  while (at >= 0) {
    const end = json.indexOf('"', at + prefix.length)
    const text = gathered.texts[Number(json.slice(at + prefix.length, end))]
    if (end < 0 || text === undefined) break
    out += json.slice(from, at) + text
    from = end + 1
    at = json.indexOf(prefix, from)
  }
  return out + json.slice(from)
}
