import type { CallbackEvent } from '../../fold/fold.event.js'
import {
  callbackScope,
  foldCallbacks,
  foldSightings,
  foldStop,
  type GraphChanges,
  type GraphScope,
  type GraphStates,
  sightingScope,
} from '../../fold/graph.fold.js'
import { taskEvents } from '../../model/event.codec.js'
import type { TaskListAnswer } from '../../model/task-list.schema.js'
import type { Db } from '../../storage/database.client.js'
import { allStatements } from '../../storage/database.errors.js'
import { listedNow, lockGraphOf, readGraphStates, writeChanges } from '../../storage/graph/graph.statements.js'
import { notifyStatement } from '../../storage/notify.statements.js'
import { appendWebhookEvents } from '../../storage/outbound/webhook.statements.js'
import { type DerivedEvent, taskTransitions } from '../../fold/task.transitions.js'
import { recordingNode, taskAuthor } from '../../fold/task.derive.js'
import type { TaskState } from '../../fold/task.fold.js'
import {
  type AnnouncedRecording,
  upsertAnnouncedRecordings,
  type WrittenRecording,
} from '../../storage/graph/recording.statements.js'

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
export async function applyToGraph(
  tx: Db,
  evidence: readonly GraphEvidence[],
  now: Date,
  options: { derivedEvents?: boolean } = {},
): Promise<GraphChanges> {
  const deriving = options.derivedEvents ?? true
  const changes: GraphChanges = { tasks: [], users: [] }
  if (evidence.length === 0) return changes
  await lockGraphOf(
    tx,
    evidence.map((e) => e.serviceCode),
  )
  const derived: DerivedEvent[] = []
  const announced: Array<{ serviceCode: string; recordings: AnnouncedRecording[] }> = []
  for (const part of evidence) {
    const scope = await part.scope(tx)
    if (scope.taskIds.length === 0 && scope.userNames.length === 0) continue
    const states = await readGraphStates(tx, part.serviceCode, scope)
    const folded = part.fold(states, scope)
    changes.tasks.push(...folded.tasks)
    changes.users.push(...folded.users)
    if (deriving)
      for (const task of folded.tasks) derived.push(...taskTransitions(states.tasks.get(task.taskId), task, now))
    const recordings = folded.tasks.flatMap((task) => newRecordings(states.tasks.get(task.taskId), task))
    if (recordings.length > 0) announced.push({ serviceCode: part.serviceCode, recordings })
  }
  const notify = notifyStatement(taskEvents(changes.tasks))
  // The catalogue learns of a type 2 in the fold's transaction: a recording is never announced twice.
  const catalogue = announced.map(async (code) => {
    const written = await upsertAnnouncedRecordings(tx, code.serviceCode, code.recordings, now)
    if (deriving) await appendRecordingReady(tx, code.serviceCode, written, 'CALLBACK', now)
  })
  await allStatements([
    writeChanges(tx, changes, now),
    notify ? tx.execute(notify) : undefined,
    appendWebhookEvents(tx, derived),
    ...catalogue,
  ])
  return changes
}

// The archived files (type 2) a fold added to a task, as the catalogue of recordings keeps them.
function newRecordings(before: TaskState | undefined, after: TaskState): AnnouncedRecording[] {
  const known = new Set(before?.recordings.map((recording) => recording.value.fileName))
  const author = taskAuthor(after)
  return (
    after.recordings
      // A file named twice (a type 2 repeated) is one row: the statement may touch a row once.
      .filter(
        (recording) =>
          recording.value.fileName && !known.has(recording.value.fileName) && known.add(recording.value.fileName),
      )
      .map(recordingNode)
      .map((node) => ({
        fileName: node.fileName as string,
        taskId: after.taskId,
        userName: author,
        url: node.url,
        duration: node.duration,
        width: node.width,
        height: node.height,
        outputIndex: node.outputIndex,
        tag: node.tag,
        path: node.path,
        format: node.format,
        inputBytes: node.inputBytes,
        httpOutputBytes: node.httpOutputBytes,
        liveStartedAt: node.createdAt,
        receivedAt: node.receivedAt,
      }))
  )
}

/**
 * `recording.ready` for each recording a statement created: the first time either channel told
 * it, once per recording (the row is inserted once). Written by the caller in the transaction
 * that created the rows.
 */
export async function appendRecordingReady(
  tx: Db,
  serviceCode: string,
  written: readonly WrittenRecording[],
  seenIn: 'CALLBACK' | 'FILE_LIST',
  at: Date,
): Promise<void> {
  const events = written
    .filter((row) => row.created)
    .map((row) => ({
      type: 'recording.ready',
      serviceCode,
      taskId: row.taskId,
      occurredAt: at,
      facts: { recording: { fileName: row.fileName, seenIn: [seenIn] } },
    }))
  await appendWebhookEvents(tx, events)
}
