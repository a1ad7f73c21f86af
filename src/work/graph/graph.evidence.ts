import type { CallbackEvent } from '../../fold/fold.event.js'
import { callbackScope, foldCallbacks, foldSightings, foldStop, type GraphChanges, type GraphScope, type GraphStates, sightingScope } from '../../fold/graph.fold.js'
import { taskEvents } from '../../model/event.codec.js'
import type { TaskListAnswer } from '../../model/task-list.schema.js'
import type { Db } from '../../storage/database.client.js'
import { listedNow, lockGraphOf, readGraphStates, writeChanges } from '../../storage/graph/graph.statements.js'
import { notifyStatement } from '../../storage/notify.statements.js'
import { appendWebhookEvents } from '../../storage/outbound/webhook.statements.js'
import { type DerivedEvent, taskTransitions } from '../../fold/task.transitions.js'

/** Evidence about one service code's graph: which entities it is about, and how it folds into them. */
export interface GraphEvidence {
  serviceCode: string
  scope(tx: Db): Promise<GraphScope>
  fold(states: GraphStates, scope: GraphScope): GraphChanges
}

/** Callbacks of one service code, as evidence. */
export function callbackEvidence(serviceCode: string, events: readonly CallbackEvent[]): GraphEvidence {
  return {
    serviceCode,
    scope: async () => callbackScope(events),
    fold: (states) => foldCallbacks(serviceCode, states, events),
  }
}

/** One successful task_list answer, as evidence: what it lists, and what the previous one did. */
export function taskListEvidence(serviceCode: string, answer: TaskListAnswer, takenAt: Date): GraphEvidence {
  return {
    serviceCode,
    scope: async (tx) => sightingScope(answer, await listedNow(tx, serviceCode)),
    fold: (states, scope) => foldSightings(serviceCode, states, scope, answer, takenAt.getTime()),
  }
}

/** A stop the cloud accepted, as evidence about its task. */
export function stopEvidence(serviceCode: string, taskId: string, requestedAt: Date): GraphEvidence {
  return {
    serviceCode,
    scope: async () => ({ taskIds: [taskId], userNames: [] }),
    fold: (states) => foldStop(serviceCode, states, taskId, requestedAt.getTime()),
  }
}

/**
 * The one way task and user states change, in the caller's transaction: lock the service codes'
 * graphs, read the states the evidence is about, fold, write what changed, and announce the
 * changed tasks (delivered to `taskChanged` subscribers only if the transaction commits), and
 * the starts and ends it made (webhook events, committed with the fold or not at all). The
 * fold is a join-semilattice, so evidence folded twice or out of order changes nothing more.
 * Without `derivedEvents` (no webhook endpoint is configured) the starts and ends are not kept:
 * nobody would read them, and every pass would pay for them.
 */
export async function applyToGraph(tx: Db, evidence: readonly GraphEvidence[], now: Date, options: { derivedEvents?: boolean } = {}): Promise<GraphChanges> {
  const deriving = options.derivedEvents ?? true
  const changes: GraphChanges = { tasks: [], users: [] }
  if (evidence.length === 0) return changes
  await lockGraphOf(
    tx,
    evidence.map((e) => e.serviceCode),
  )
  const derived: DerivedEvent[] = []
  for (const part of evidence) {
    const scope = await part.scope(tx)
    if (scope.taskIds.length === 0 && scope.userNames.length === 0) continue
    const states = await readGraphStates(tx, part.serviceCode, scope)
    const folded = part.fold(states, scope)
    changes.tasks.push(...folded.tasks)
    changes.users.push(...folded.users)
    if (deriving) for (const task of folded.tasks) derived.push(...taskTransitions(states.tasks.get(task.taskId), task, now))
  }
  const notify = notifyStatement(taskEvents(changes.tasks))
  await Promise.all([writeChanges(tx, changes, now), notify ? tx.execute(notify) : undefined, appendWebhookEvents(tx, derived)])
  return changes
}
