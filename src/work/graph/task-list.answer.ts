import type { GraphChanges } from '../../fold/graph.fold.js'
import type { TaskListAnswer } from '../../model/task-list.schema.js'
import type { Db } from '../../storage/database.client.js'
import type { AnswerSampler } from './answer.sampler.js'
import { applyToGraph, taskListEvidence } from './graph.evidence.js'
import { backoffMs } from '../wake.scheduler.js'

/**
 * Folds one task_list answer into the graph and tells every instance what changed, in one
 * transaction (with its samples, when a sampler is given). The one way an answer enters the graph.
 */
export async function foldTaskListAnswer(
  db: Db,
  serviceCode: string,
  answer: TaskListAnswer,
  takenAt: Date,
  sampler?: AnswerSampler,
): Promise<GraphChanges> {
  if (!sampler)
    return db.transaction((tx) => applyToGraph(tx, [taskListEvidence(serviceCode, answer, takenAt)], takenAt))
  await sampler.prepare(db, takenAt)
  const [changes, samples] = await db.transaction(async (tx) => {
    const changed = await applyToGraph(tx, [taskListEvidence(serviceCode, answer, takenAt)], takenAt)
    return [changed, await sampler.sample(tx, serviceCode, answer, takenAt)] as const
  })
  sampler.committed(samples)
  return changes
}

/**
 * The wait before the next poll after `failures` failures in a row: the interval while the code
 * answers, then the one backoff ({@link backoffMs}) from the interval up to the cap.
 */
export function pollDelayMs(failures: number, intervalMs: number, maxMs: number, random: () => number): number {
  if (failures <= 0) return intervalMs
  return backoffMs(failures, intervalMs, maxMs, random)
}
