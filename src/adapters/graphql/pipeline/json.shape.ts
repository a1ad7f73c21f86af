import { type DirectiveNode, type FieldNode, type FragmentDefinitionNode, Kind, type SelectionSetNode } from 'graphql'
import { NOTIFICATION_JSON_TYPES } from '../../../storage/graph/notification.json.js'
import { type JsonField, jsonFieldsOf } from '../../../storage/graph/task.json.js'

/**
 * What the JSON text rewrite reads of a selection: its fields through fragments, their response
 * keys, the `@skip`/`@include` written in the document, and the fields a part's text writes.
 */

/** The operation's fragments, by name. */
export type Fragments = Readonly<Record<string, FragmentDefinitionNode>>

const NOTIFICATION_TYPE_NAMES = new Set([...NOTIFICATION_JSON_TYPES.map((entry) => entry.name), 'Notification', 'Node'])
// Where a fragment on an interface applies: the notification types are Notifications and Nodes.
const NOTIFICATION_INTERFACES = new Set(['Notification', 'Node'])

/** A field's response key: its alias, else its name. */
export function responseKey(field: FieldNode): string {
  return field.alias?.value ?? field.name.value
}

/** Every field of a selection set, through inline fragments and spreads, whatever their directives. */
export function fieldsOf(set: SelectionSetNode | undefined, fragments: Fragments, into: FieldNode[] = []): FieldNode[] {
  for (const selection of set?.selections ?? []) {
    if (selection.kind === Kind.FIELD) into.push(selection)
    else if (selection.kind === Kind.INLINE_FRAGMENT) fieldsOf(selection.selectionSet, fragments, into)
    else fieldsOf(fragments[selection.name.value]?.selectionSet, fragments, into)
  }
  return into
}

export function responseKeyCounts(set: SelectionSetNode, fragments: Fragments): Map<string, number> {
  const counts = new Map<string, number>()
  for (const field of fieldsOf(set, fragments))
    counts.set(responseKey(field), (counts.get(responseKey(field)) ?? 0) + 1)
  return counts
}

export function onlySkipInclude(directives: readonly DirectiveNode[] | undefined): boolean {
  return (directives ?? []).every((directive) => directive.name.value === 'skip' || directive.name.value === 'include')
}

/**
 * Whether a selection is kept, by directives whose conditions are written in the document; undefined when one is a
 * variable or another directive.
 */
export function keptStatically(directives: readonly DirectiveNode[] | undefined): boolean | undefined {
  let kept = true
  for (const directive of directives ?? []) {
    const name = directive.name.value
    const condition = directive.arguments?.find((argument) => argument.name.value === 'if')?.value
    if ((name !== 'skip' && name !== 'include') || condition?.kind !== Kind.BOOLEAN) return undefined
    if (name === 'skip' ? condition.value : !condition.value) kept = false
  }
  return kept
}

/**
 * A pure-data selection as the fields to write, merged by response key in the order GraphQL
 * answers them; null when some part cannot be written as text (a field the text does not know,
 * arguments, a fragment on another type, a directive whose condition is a variable).
 */
export function jsonShape(
  set: SelectionSetNode | undefined,
  typeName: string,
  fragments: Fragments,
): JsonField[] | null {
  const known = jsonFieldsOf(typeName)
  if (!set || !known) return null
  const byKey = new Map<string, FieldNode[]>()
  const collect = (inner: SelectionSetNode): boolean => {
    for (const selection of inner.selections) {
      const kept = keptStatically(selection.directives)
      if (kept === undefined) return false
      if (!kept) continue
      if (selection.kind === Kind.FIELD) {
        const key = responseKey(selection)
        byKey.set(key, [...(byKey.get(key) ?? []), selection])
        continue
      }
      const typeCondition =
        selection.kind === Kind.INLINE_FRAGMENT
          ? selection.typeCondition
          : fragments[selection.name.value]?.typeCondition
      const body =
        selection.kind === Kind.INLINE_FRAGMENT ? selection.selectionSet : fragments[selection.name.value]?.selectionSet
      if (!body) return false
      if (typeCondition && typeCondition.name.value !== typeName) {
        // A fragment on another notification type does not apply; on anything else, not supported.
        if (!NOTIFICATION_TYPE_NAMES.has(typeName) || !NOTIFICATION_TYPE_NAMES.has(typeCondition.name.value))
          return false
        if (!NOTIFICATION_INTERFACES.has(typeCondition.name.value)) continue
      }
      if (!collect(body)) return false
    }
    return true
  }
  if (!collect(set)) return null
  const fields: JsonField[] = []
  for (const [key, nodes] of byKey) {
    const name = (nodes[0] as FieldNode).name.value
    if (!known.has(name) || nodes.some((node) => node.name.value !== name || (node.arguments?.length ?? 0) > 0))
      return null
    const childType = known.get(name)
    if (!childType) {
      fields.push({ key, name })
      continue
    }
    const merged: SelectionSetNode = {
      kind: Kind.SELECTION_SET,
      selections: nodes.flatMap((node) => node.selectionSet?.selections ?? []),
    }
    if (childType === 'Notification') {
      // An abstract type: what is asked of each object type it can be.
      const byType: Record<string, JsonField[]> = {}
      for (const { name: objectType } of NOTIFICATION_JSON_TYPES) {
        const inner = jsonShape(merged, objectType, fragments)
        if (!inner) return null
        byType[objectType] = inner
      }
      fields.push({ key, name, byType })
      continue
    }
    const inner = jsonShape(merged, childType, fragments)
    if (!inner) return null
    fields.push({ key, name, fields: inner })
  }
  return fields
}
