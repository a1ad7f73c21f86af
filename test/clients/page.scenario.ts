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
export async function deliverTask(
  deliver: Deliver,
  taskId: string,
  userName: string,
  only?: 'liveStart',
): Promise<void> {
  const samples = sampleCallbacks(taskId)
  const mine = (fields: Record<string, string>) => ({
    ...fields,
    ...('author' in fields ? { author: userName } : {}),
    ...('username' in fields ? { username: userName } : {}),
  })
  const kinds = only
    ? [samples.liveStart]
    : [samples.liveStart, samples.liveEnd, samples.archived, samples.thumbnail, samples.liveResume]
  for (const fields of kinds) expect((await deliver(mine(fields as Record<string, string>))).status).toBe(200)
}

// A thumbnail of the task with a new file name: a change that re-folds the task.
const probeFields = (taskId: string): Record<string, string> => ({
  ...(sampleCallbacks(taskId).thumbnail as Record<string, string>),
  file_name: `probe-${randomUUID()}.jpg`,
})

/** What a task page holds while it watches its task: the subscription's events and the statuses the page showed. */
export interface Watching {
  /** The task's global id, its hashed id, and another live task of the same user. */
  id: string
  taskId: string
  other: string
  events: Array<{ id: string; taskId: string; status: string }>
  shown: string[]
}

/**
 * Drives a task page's `taskChanged` subscription: probes the task until the subscription
 * surely started, changes another task, ends the watched one; then asserts that only the watched
 * task's changes came, the last ENDED, and that the page showed ENDED without asking again.
 */
export async function endWatchedTask(deliver: Deliver, { id, taskId, other, events, shown }: Watching): Promise<void> {
  await expect
    .poll(
      async () => {
        await deliver(probeFields(taskId))
        return events.length
      },
      { timeout: 15_000, interval: 300 },
    )
    .toBeGreaterThan(0)
  await deliver(probeFields(other))
  expect((await deliver(sampleCallbacks(taskId).liveEnd as Record<string, string>)).status).toBe(200)
  await expect.poll(() => events.at(-1)?.status, { timeout: 15_000 }).toBe('ENDED')
  expect(events.every((event) => event.id === id && event.taskId === taskId)).toBe(true)
  await expect.poll(() => shown.at(-1), { timeout: 15_000 }).toBe('ENDED')
}
