import type { OutputNode, UserNode } from '../../../fold/graph.model.js'
import { deriveTask } from '../../../fold/task.derive.js'
import { deriveUser } from '../../../fold/user.fold.js'
import type { ActionRow } from '../../../storage/tables/action.table.js'
import type { IncidentRow } from '../../../storage/tables/incident.table.js'
import { inScope } from '../auth.scope.js'
import type { GraphqlContext } from './request.context.js'
import { type GlobalId, toGlobalId } from '../global.id.js'
import { type NotificationNode, notificationNode } from './notification.view.js'
import { tagNode } from '../types/node.type.js'
import { notificationTypeName } from '../types/notification.type.js'
import type { TaskView } from '../../../storage/tables/task.node.js'
import type { OutputView } from '../types/output.type.js'
import { type RecordingView, recordingView } from './recording.view.js'

/** What a `Node` resolves from. */
/** An output as `Output` resolves from: of a derived task or of a stored one. */
export type OutputValue = TaskView['outputs'][number] & OutputView

export type NodeValue = TaskView | UserNode | OutputValue | NotificationNode | ActionRow | IncidentRow | RecordingView

/** A task's global id: of its service code and `hashed_id`. */
export function taskGlobalId(task: Pick<TaskView, 'serviceCode' | 'id'>): string {
  return toGlobalId('Task', task.serviceCode, task.id)
}

/** A user's global id: of its service code and name. */
export function userGlobalId(user: Pick<UserNode, 'serviceCode' | 'userName'>): string {
  return toGlobalId('User', user.serviceCode, user.userName)
}

// An output is the fold's join of its tag and container (outputKey in src/fold/task.fold.ts);
// its index can change as notifications arrive, so it is no part of the id.
function outputKeyOf(output: Pick<OutputNode, 'tag' | 'format'>): string {
  return `${output.tag ?? ''}|${output.format?.container ?? ''}`
}

/** A task's outputs as `Output` values: each with its global id and its task. */
export function outputViews(task: TaskView): OutputValue[] {
  return task.outputs.map((output) => ({
    ...output,
    id: toGlobalId('Output', task.serviceCode, task.id, outputKeyOf(output)),
    task,
  }))
}

/**
 * The node a parsed global id names, tagged with its object type for `Node.resolveType`; null
 * when there is none the caller may see. Every kind is read through the request's loaders, so
 * `nodes` with many ids costs one statement per kind.
 */
export async function loadNode(context: GraphqlContext, id: GlobalId): Promise<NodeValue | null> {
  const { loaders } = context
  const [first = '', second = '', third = ''] = id.key
  switch (id.type) {
    case 'Task': {
      const row = await loaders.task.load({ serviceCode: first, taskId: second })
      return row ? tagNode(deriveTask(row.state), 'Task') : null
    }
    case 'User': {
      const row = await loaders.user.load({ serviceCode: first, userName: second })
      return row ? tagNode(deriveUser(row.state), 'User') : null
    }
    case 'Output': {
      const row = await loaders.task.load({ serviceCode: first, taskId: second })
      const output = row ? outputViews(deriveTask(row.state)).find((view) => outputKeyOf(view) === third) : undefined
      return output ? tagNode(output, 'Output') : null
    }
    case 'Notification': {
      const row = await loaders.notification.load(Number(first))
      if (!row) return null
      const node = notificationNode(row)
      return tagNode(node, notificationTypeName(node))
    }
    case 'Action': {
      const row = await loaders.action.load(Number(first))
      return row && inScope(context.scope, row.serviceCode) && (await owned(context, row))
        ? tagNode(row, 'Action')
        : null
    }
    case 'Incident': {
      const row = await loaders.incident.load(Number(first))
      return row && inScope(context.scope, row.serviceCode) && (await owned(context, { ...row, userName: null }))
        ? tagNode(row, 'Incident')
        : null
    }
    case 'Recording': {
      // Another tenant's recording reads as none: its existence is not told.
      if (!inScope(context.scope, first)) return null
      const row = await loaders.recording.load({ serviceCode: first, fileName: second })
      return row && (await owned(context, row)) ? tagNode(recordingView(row), 'Recording') : null
    }
  }
}

/**
 * Whether a row hanging off a task is the caller's in a broadcaster's own view: it names the user,
 * or its task is one the caller reads (the scoped task loader). The rule the lists' SQL applies
 * (storage: `ownedBy`, `recordingOwnedBy`); always true without a user in the scope.
 */
async function owned(
  context: GraphqlContext,
  row: { serviceCode: string; taskId: string | null; userName: string | null },
): Promise<boolean> {
  const userName = context.scope.userName
  if (userName === undefined || row.userName === userName) return true
  if (row.taskId === null) return false
  return (await context.loaders.task.load({ serviceCode: row.serviceCode, taskId: row.taskId })) !== null
}
