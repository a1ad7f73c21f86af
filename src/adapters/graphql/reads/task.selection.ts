import type { FieldNode, FragmentDefinitionNode, GraphQLResolveInfo, SelectionSetNode } from 'graphql'

import { deriveTask } from '../../../fold/task.derive.js'
import type { TaskColumn, TaskJsonRead, TaskListRow } from '../../../storage/graph/task.queries.js'
import { keepJsonTexts } from './json.parts.js'
import type { StoredTaskNode, TaskView } from '../../../storage/tables/task.node.js'

/**
 * Which stored columns each field of `Task` is answered from. The keys (`id`, `serviceCode`) are
 * read always; a field not named here needs the whole derived node.
 */
const COLUMN_OF_FIELD: Readonly<Record<string, TaskColumn | null>> = {
  __typename: null,
  // The global id and the hashed_id are made of the keys.
  id: null,
  taskId: null,
  serviceCode: null,
  // Its own statement, keyed by the task's id.
  notifications: null,
  status: 'status',
  endReason: 'endReason',
  userName: 'author',
  // A loader, keyed by the service code and the author.
  user: 'author',
  // A part read as JSON text (json.parts.ts), its own column.
  _livegateJsonText: null,
}

// A document's selection is the same on every request: walked once per field node.
const known = new WeakMap<FieldNode, ReadonlySet<TaskColumn>>()

/**
 * The task columns a `tasks` connection field's selection needs (through `edges { node }`,
 * fragments and inline fragments included; `@skip` and `@include` read as included).
 */
export function taskColumnsOf(info: Pick<GraphQLResolveInfo, 'fieldNodes' | 'fragments'>): ReadonlySet<TaskColumn> {
  const first = info.fieldNodes[0]
  const cached = first && info.fieldNodes.length === 1 ? known.get(first) : undefined
  if (cached) return cached
  const columns = new Set<TaskColumn>()
  for (const field of info.fieldNodes) {
    for (const edges of fieldsNamed(field.selectionSet, 'edges', info.fragments)) {
      for (const node of fieldsNamed(edges.selectionSet, 'node', info.fragments)) {
        for (const taskField of fieldsNamed(node.selectionSet, undefined, info.fragments)) {
          const name = taskField.name.value
          const column = Object.hasOwn(COLUMN_OF_FIELD, name) ? COLUMN_OF_FIELD[name] : 'node'
          if (column) columns.add(column)
        }
      }
    }
  }
  if (first && info.fieldNodes.length === 1) known.set(first, columns)
  return columns
}

/**
 * Whether a connection field's selection reads `pageInfo`: only then is the row past the page
 * worth fetching (a page of tasks showing each one's latest 5 notifications reads 5 each).
 */
export function asksForPageInfo(info: Pick<GraphQLResolveInfo, 'fieldNodes' | 'fragments'>): boolean {
  // Asked once per task of a page: the answer is the document's, kept per field node.
  const first = info.fieldNodes.length === 1 ? info.fieldNodes[0] : undefined
  const cached = first ? readsPageInfo.get(first) : undefined
  if (cached !== undefined) return cached
  const asks = info.fieldNodes.some((field) => fieldsNamed(field.selectionSet, 'pageInfo', info.fragments).length > 0)
  if (first) readsPageInfo.set(first, asks)
  return asks
}

const readsPageInfo = new WeakMap<FieldNode, boolean>()

/** A task row as the node `Task` resolves from: the stored node when it was read, else the columns that were. */
export function taskNodeOf(row: TaskListRow, json?: TaskJsonRead): TaskView | StoredTaskNode {
  const node = nodeOfRow(row)
  keepJsonTexts(row, node, json)
  return node
}

function nodeOfRow(row: TaskListRow): TaskView | StoredTaskNode {
  // Stored times are epoch milliseconds, which the DateTime scalar writes as it writes a Date.
  if (row.node) return row.node
  if (row.state) return deriveTask(row.state)
  const { taskId: id, serviceCode, status, endReason, author } = row
  return { id, serviceCode, status, endReason, author } as TaskView
}

function fieldsNamed(
  set: SelectionSetNode | undefined,
  name: string | undefined,
  fragments: Record<string, FragmentDefinitionNode>,
  into: FieldNode[] = [],
): FieldNode[] {
  for (const selection of set?.selections ?? []) {
    if (selection.kind === 'Field') {
      if (name === undefined || selection.name.value === name) into.push(selection)
    } else if (selection.kind === 'InlineFragment') {
      fieldsNamed(selection.selectionSet, name, fragments, into)
    } else {
      fieldsNamed(fragments[selection.name.value]?.selectionSet, name, fragments, into)
    }
  }
  return into
}
