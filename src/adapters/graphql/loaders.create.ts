import DataLoader from 'dataloader'
import type { Db } from '../../storage/database.client.js'
import type { TaskRow } from '../../storage/graph.table.js'
import { countNotificationsForTasks, latestNotificationsForTasks, type NotificationRow } from '../../storage/notification.queries.js'
import { tasksByTaskIds } from '../../storage/task.queries.js'

/**
 * The DataLoaders of one GraphQL request. They batch the lookups of one request into one
 * statement and cache them for that request only, so no answer outlives the request it served.
 */
export interface Loaders {
  /**
   * The newest `perTask` notifications of a task, newest first: `notificationsOfTask(5).load(taskId)`.
   * Every task asked for with the same `perTask` in one tick is read in one statement.
   */
  notificationsOfTask(perTask: number): DataLoader<string, NotificationRow[]>
  /** How many notifications a task has. */
  notificationCountOfTask: DataLoader<string, number>
  /** A task row by `hashed_id`; a page of tasks primes it. */
  task: DataLoader<string, TaskRow | null>
}

// Below PostgreSQL's 65 535 bound parameters per statement, with room to spare.
const MAX_BATCH = 1000

/** Builds a fresh set of loaders, reading only what the caller's scope allows; call once per request. */
export function createLoaders(db: Db, allowedServiceCodes: readonly string[] | undefined): Loaders {
  const byPerTask = new Map<number, DataLoader<string, NotificationRow[]>>()
  return {
    notificationCountOfTask: new DataLoader<string, number>(
      async (taskIds) => {
        const counts = await countNotificationsForTasks(db, taskIds, allowedServiceCodes)
        return taskIds.map((id) => counts.get(id) ?? 0)
      },
      { maxBatchSize: MAX_BATCH },
    ),
    task: new DataLoader<string, TaskRow | null>(
      async (taskIds) => {
        const rows = await tasksByTaskIds(db, taskIds, allowedServiceCodes)
        const byId = new Map(rows.map((row) => [row.taskId, row]))
        return taskIds.map((id) => byId.get(id) ?? null)
      },
      { maxBatchSize: MAX_BATCH },
    ),
    notificationsOfTask(perTask) {
      let loader = byPerTask.get(perTask)
      if (!loader) {
        loader = new DataLoader<string, NotificationRow[]>(
          async (taskIds) => {
            const found = await latestNotificationsForTasks(db, taskIds, perTask, allowedServiceCodes)
            return taskIds.map((id) => found.get(id) ?? [])
          },
          { maxBatchSize: MAX_BATCH },
        )
        byPerTask.set(perTask, loader)
      }
      return loader
    },
  }
}
