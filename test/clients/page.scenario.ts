import { randomUUID } from 'node:crypto'
import { expect } from 'vitest'
import type { Answer } from '../support/gateway.fixture.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'

type Deliver = (fields: Record<string, string>) => Promise<Answer>

/** The notifications the samples carry about one task (the disconnect names a user, not a task). */
export const TASK_NOTIFICATIONS = 5

/** A fresh name, so each test's tasks and users are its own in the file's database. */
export const fresh = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`

/**
 * Delivers a task's signed callbacks with `userName` as its author: all five about the task, or
 * only its live start (a task still live).
 */
export async function deliverTask(deliver: Deliver, taskId: string, userName: string, only?: 'liveStart'): Promise<void> {
  const samples = sampleCallbacks(taskId)
  const mine = (fields: Record<string, string>) => ({
    ...fields,
    ...('author' in fields ? { author: userName } : {}),
    ...('username' in fields ? { username: userName } : {}),
  })
  const kinds = only ? [samples.liveStart] : [samples.liveStart, samples.liveEnd, samples.archived, samples.thumbnail, samples.liveResume]
  for (const fields of kinds) expect((await deliver(mine(fields as Record<string, string>))).status).toBe(200)
}

/** A thumbnail of the task with a new file name: a change that re-folds the task, to probe a subscription. */
export function probeFields(taskId: string): Record<string, string> {
  return { ...(sampleCallbacks(taskId).thumbnail as Record<string, string>), file_name: `probe-${randomUUID()}.jpg` }
}

/** Finishes a task: its live end (`reach_end=1`), after which its status is ENDED. */
export function endFields(taskId: string): Record<string, string> {
  return sampleCallbacks(taskId).liveEnd as Record<string, string>
}
