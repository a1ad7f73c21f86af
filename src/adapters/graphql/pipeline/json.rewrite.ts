import {
  type DocumentNode,
  extendSchema,
  type FieldNode,
  type FragmentDefinitionNode,
  getOperationAST,
  GraphQLObjectType,
  type GraphQLSchema,
  Kind,
  parse,
  type SelectionNode,
  type SelectionSetNode,
  type ValueNode,
} from 'graphql'
import { TASK_JSON_PART_TYPE, type TaskJsonKind, type TaskJsonPart } from '../../../storage/graph/task.json.js'
import { JSON_TEXT_FIELD, jsonTextMarker, setJsonPlan } from '../reads/json.parts.js'
import { type Fragments, fieldsOf, jsonShape, onlySkipInclude, responseKey, responseKeyCounts } from './json.shape.js'

/**
 * How a query runs with a task page's pure-data parts as JSON text: the schema it runs on and the rewrite of its
 * document.
 */
export interface JsonTextExecution {
  /**
   * The schema with the placeholder field (`Task._livegateJsonText`), for execution only: validation, limits and
   * introspection see the published one.
   */
  schema: GraphQLSchema
  /** The document with each part that can be written as text turned into a placeholder; null when none can. */
  rewrite(document: DocumentNode, operationName: string | undefined): DocumentNode | null
}

/** The JSON text execution for a schema with a `Task` type; undefined without one. */
export function jsonTextExecution(schema: GraphQLSchema): JsonTextExecution | undefined {
  if (!(schema.getType('Task') instanceof GraphQLObjectType)) return undefined
  const extended = extendSchema(schema, parse(`extend type Task { ${JSON_TEXT_FIELD}(part: Int!): String }`), {
    assumeValidSDL: true,
  })
  const placeholder = (extended.getType('Task') as GraphQLObjectType).getFields()[JSON_TEXT_FIELD]
  if (!placeholder) return undefined
  placeholder.resolve = jsonTextMarker
  return { schema: extended, rewrite: rewriteDocument }
}

const PARTS = new Set<string>([...Object.keys(TASK_JSON_PART_TYPE), 'notifications'])

/**
 * The query with each `tasks { edges { node { outputs | recordings | thumbnails } } }` whose
 * selection can be written as text replaced, in place and under the same response key, by the
 * placeholder; fragment spreads along that path become inline fragments, so a fragment used
 * elsewhere is left as it was. A path whose response key occurs more than once (fields merged
 * by GraphQL) is left to the object path.
 */
function rewriteDocument(document: DocumentNode, operationName: string | undefined): DocumentNode | null {
  const operation = getOperationAST(document, operationName)
  if (operation?.operation !== 'query') return null
  const fragments: Record<string, FragmentDefinitionNode> = {}
  for (const definition of document.definitions)
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments[definition.name.value] = definition
  const root = rewriteUnique(operation.selectionSet, fragments, 'tasks', (tasks) => {
    const parts: TaskJsonPart[] = []
    const firsts = new Map<number, ValueNode | undefined>()
    const rewritten = new Map<string, { all: number; text: number }>()
    const set = rewriteUnique(tasks.selectionSet, fragments, 'edges', (edges) =>
      rewriteUnique(edges.selectionSet, fragments, 'node', (node) =>
        rewriteTask(node.selectionSet, fragments, { parts, firsts, counts: rewritten }),
      ),
    )
    if (!set) return null
    const field: FieldNode = { ...tasks, selectionSet: set }
    const dropFromNode = [...rewritten]
      .filter(([kind, count]) => kind !== 'notifications' && count.all === count.text)
      .map(([kind]) => kind as TaskJsonKind)
    setJsonPlan(field, { read: { parts, dropFromNode }, firsts })
    return field
  })
  if (!root) return null
  return {
    ...document,
    definitions: document.definitions.map((definition) =>
      definition === operation ? { ...operation, selectionSet: root } : definition,
    ),
  }
}

interface TaskRewrite {
  parts: TaskJsonPart[]
  /** Each notifications part's `first` argument, read with the request's variables. */
  firsts: Map<number, ValueNode | undefined>
  counts: Map<string, { all: number; text: number }>
}

/** The Task selection with each part that can be written as text made a placeholder. */
function rewriteTask(
  set: SelectionSetNode | undefined,
  fragments: Fragments,
  into: TaskRewrite,
): SelectionSetNode | null {
  if (!set) return null
  const { parts, counts } = into
  const keys = responseKeyCounts(set, fragments)
  for (const field of fieldsOf(set, fragments)) {
    if (PARTS.has(field.name.value))
      counts.set(field.name.value, {
        all: (counts.get(field.name.value)?.all ?? 0) + 1,
        text: counts.get(field.name.value)?.text ?? 0,
      })
  }
  const mapped = mapSelections(set, fragments, (field) => {
    const name = field.name.value
    if (!PARTS.has(name) || keys.get(responseKey(field)) !== 1 || !onlySkipInclude(field.directives)) return null
    const part = partOf(field, fragments)
    if (!part) return null
    parts.push(part.part)
    if (part.part.kind === 'notifications') into.firsts.set(parts.length - 1, part.first)
    ;(counts.get(name) as { text: number }).text++
    return {
      kind: Kind.FIELD,
      alias: { kind: Kind.NAME, value: responseKey(field) },
      name: { kind: Kind.NAME, value: JSON_TEXT_FIELD },
      arguments: [
        {
          kind: Kind.ARGUMENT,
          name: { kind: Kind.NAME, value: 'part' },
          value: { kind: Kind.INT, value: String(parts.length - 1) },
        },
      ],
      directives: field.directives ?? [],
      ...(field.loc ? { loc: field.loc } : {}),
    }
  })
  return mapped
}

/** A Task field as a part to write as text; null when its arguments or selection cannot be. */
function partOf(field: FieldNode, fragments: Fragments): { part: TaskJsonPart; first?: ValueNode | undefined } | null {
  const kind = field.name.value
  if (kind !== 'notifications') {
    if ((field.arguments?.length ?? 0) > 0) return null
    const fields = jsonShape(field.selectionSet, TASK_JSON_PART_TYPE[kind as TaskJsonKind], fragments)
    return fields ? { part: { kind: kind as TaskJsonKind, fields } } : null
  }
  // The latest few of each task, as the page's loader reads them: `first` only (no filter, no cursor).
  if ((field.arguments ?? []).some((argument) => argument.name.value !== 'first')) return null
  const fields = jsonShape(field.selectionSet, 'NotificationConnection', fragments)
  return fields ? { part: { kind: 'notifications', fields, perTask: null }, first: field.arguments?.[0]?.value } : null
}

/** `set` with the fields named `name` whose response key is unique rewritten by `rewrite`; null when none was. */
function rewriteUnique(
  set: SelectionSetNode | undefined,
  fragments: Fragments,
  name: string,
  rewrite: (field: FieldNode) => FieldNode | SelectionSetNode | null,
): SelectionSetNode | null {
  if (!set) return null
  const keys = responseKeyCounts(set, fragments)
  return mapSelections(set, fragments, (field) => {
    if (field.name.value !== name || keys.get(responseKey(field)) !== 1) return null
    const done = rewrite(field)
    if (!done) return null
    return done.kind === Kind.SELECTION_SET ? { ...field, selectionSet: done } : done
  })
}

/**
 * The selection set with fields replaced where `replace` gives one, spreads inlined on the way; null when nothing was
 * replaced.
 */
function mapSelections(
  set: SelectionSetNode,
  fragments: Fragments,
  replace: (field: FieldNode) => FieldNode | null,
): SelectionSetNode | null {
  let changed = false
  const selections = set.selections.map((selection): SelectionNode => {
    if (selection.kind === Kind.FIELD) {
      const done = replace(selection)
      if (done) changed = true
      return done ?? selection
    }
    const inline =
      selection.kind === Kind.INLINE_FRAGMENT
        ? selection
        : {
            kind: Kind.INLINE_FRAGMENT,
            typeCondition: fragments[selection.name.value]?.typeCondition,
            directives: selection.directives ?? [],
            selectionSet: fragments[selection.name.value]?.selectionSet ?? { kind: Kind.SELECTION_SET, selections: [] },
            ...(selection.loc ? { loc: selection.loc } : {}),
          }
    const inner = mapSelections(inline.selectionSet, fragments, replace)
    if (!inner) return selection
    changed = true
    return { ...inline, selectionSet: inner } as SelectionNode
  })
  return changed ? { ...set, selections } : null
}
