import DataLoader from 'dataloader'
import type { Db } from '../../../storage/database.client.js'
import type { TaskRow, UserRow } from '../../../storage/tables/graph.table.js'
import {
  countNotificationsForTasks,
  latestNotificationsForTasks,
  type NotificationRow,
  notificationsByIds,
} from '../../../storage/notification.queries.js'
import { type TaskKey, type TaskKeyPair, type TaskQuery, tasksByKeys } from '../../../storage/graph/task.queries.js'
import { countTasksOfUsers, tasksOfUsers, type UserKeyPair, userKey } from '../../../storage/graph/user-task.queries.js'
import { usersByKeys } from '../../../storage/graph/user.queries.js'
import { recordingsByKeys, recordingsOfTasks } from '../../../storage/graph/recording.queries.js'
import type { RecordingRow } from '../../../storage/tables/recording.table.js'
import { actionsByIds, type OwnedActionRow } from '../../../storage/outbound/action.queries.js'
import { incidentsByIds, type OwnedIncidentRow } from '../../../storage/alerts/incident.queries.js'

/**
 * The DataLoaders of one GraphQL request. They batch the lookups of one request into one
 * statement and cache them for that request only, so no answer outlives the request it served.
 * Every one reads within the caller's scope: a key for one service code finds nothing of another.
 */
export interface Loaders {
  /**
   * The newest `perTask` notifications of a task, newest first: `notificationsOfTask(5).load(taskId)`.
   * Every task asked for with the same `perTask` in one tick is read in one statement.
   */
  notificationsOfTask(perTask: number): DataLoader<string, NotificationRow[]>
  /** How many notifications a task has. */
  notificationCountOfTask: DataLoader<string, number>
  /** A task row by its (service code, `hashed_id`); a page of tasks primes it. */
  task: DataLoader<TaskKeyPair, TaskRow | null, string>
  /** A user row by its (service code, user name); a page of users primes it. */
  user: DataLoader<UserKeyPair, UserRow | null, string>
  /**
   * The catalogue's recordings of a task, oldest first: `Task.recordings` and `Output.recordings` of a page in one
   * statement.
   */
  recordingsOfTask: DataLoader<TaskKeyPair, RecordingRow[], string>
  /** A stored notification by its row id. */
  notification: DataLoader<number, NotificationRow | null>
  /** An action by its row id, of any scope: `node(id:)` checks the caller's (a timeline's page names many). */
  action: DataLoader<number, OwnedActionRow | null>
  /** An incident by its row id, of any scope: `node(id:)` checks the caller's. */
  incident: DataLoader<number, OwnedIncidentRow | null>
  /** A catalogue's recording by its (service code, file name), of any scope: `node(id:)` checks the caller's. */
  recording: DataLoader<RecordingKey, RecordingRow | null, string>
  /**
   * A page of each user's tasks: `tasksOfUser(page).load(user)`. Users asked for with the same
   * page (filter, cursor and size) in one tick are read in one statement.
   */
  tasksOfUser(page: UserTasksPage): DataLoader<UserKeyPair, TaskRow[], string>
  /** How many of each user's tasks match a filter. */
  taskCountOfUser(filter: TaskQuery): DataLoader<UserKeyPair, number, string>
}

/** What `User.tasks` asks of each user: the same for every user of a page. */
export interface UserTasksPage {
  filter: TaskQuery
  after: TaskKey | undefined
  fetch: number
}

// Below PostgreSQL's 65 535 bound parameters per statement, with room to spare.
const MAX_BATCH = 1000

type RecordingKey = { serviceCode: string; fileName: string }
const recordingCacheKey = (key: RecordingKey) => `${key.serviceCode}\u0000${key.fileName}`
const taskCacheKey = (key: TaskKeyPair) => `${key.serviceCode}\u0000${key.taskId}`

/** Builds a fresh set of loaders, reading only what the caller's scope allows; call once per request. */
export function createLoaders(
  db: Db,
  allowedServiceCodes: readonly string[] | undefined,
  allowedUserName?: string,
): Loaders {
  return new RequestLoaders(db, allowedServiceCodes, allowedUserName)
}

/**
 * Each loader is made when the request first asks for it: most requests use one or two, and a
 * subscription keeps its context (and so its loaders) for as long as it is open, ten thousand of
 * them at once on one process.
 */
class RequestLoaders implements Loaders {
  private madeCount: DataLoader<string, number> | undefined
  private madeTask: DataLoader<TaskKeyPair, TaskRow | null, string> | undefined
  private madeUser: DataLoader<UserKeyPair, UserRow | null, string> | undefined
  private madeRecordings: DataLoader<TaskKeyPair, RecordingRow[], string> | undefined
  private madeNotification: DataLoader<number, NotificationRow | null> | undefined
  private madeAction: DataLoader<number, OwnedActionRow | null> | undefined
  private madeIncident: DataLoader<number, OwnedIncidentRow | null> | undefined
  private madeRecording: DataLoader<RecordingKey, RecordingRow | null, string> | undefined
  private byPerTask: Map<string, DataLoader<string, NotificationRow[]>> | undefined
  private byUserPage: Map<string, DataLoader<UserKeyPair, TaskRow[], string>> | undefined
  private byUserFilter: Map<string, DataLoader<UserKeyPair, number, string>> | undefined

  constructor(
    private readonly db: Db,
    private readonly allowedServiceCodes: readonly string[] | undefined,
    private readonly allowedUserName: string | undefined,
  ) {}

  get notificationCountOfTask(): DataLoader<string, number> {
    const { db, allowedServiceCodes, allowedUserName } = this
    return (this.madeCount ??= new DataLoader<string, number>(
      async (taskIds) => {
        const counts = await countNotificationsForTasks(db, taskIds, allowedServiceCodes, allowedUserName)
        return taskIds.map((id) => counts.get(id) ?? 0)
      },
      { maxBatchSize: MAX_BATCH },
    ))
  }

  get task(): DataLoader<TaskKeyPair, TaskRow | null, string> {
    const { db, allowedServiceCodes, allowedUserName } = this
    return (this.madeTask ??= new DataLoader<TaskKeyPair, TaskRow | null, string>(
      async (keys) => {
        const rows = await tasksByKeys(db, keys, allowedServiceCodes, allowedUserName)
        const byKey = new Map(rows.map((row) => [taskCacheKey(row), row]))
        return keys.map((key) => byKey.get(taskCacheKey(key)) ?? null)
      },
      { maxBatchSize: MAX_BATCH, cacheKeyFn: taskCacheKey },
    ))
  }

  get user(): DataLoader<UserKeyPair, UserRow | null, string> {
    const { db, allowedServiceCodes, allowedUserName } = this
    return (this.madeUser ??= new DataLoader<UserKeyPair, UserRow | null, string>(
      async (keys) => {
        const rows = await usersByKeys(db, keys, allowedServiceCodes, allowedUserName)
        const byKey = new Map(rows.map((row) => [userKey(row), row]))
        return keys.map((key) => byKey.get(userKey(key)) ?? null)
      },
      { maxBatchSize: MAX_BATCH, cacheKeyFn: userKey },
    ))
  }

  get recordingsOfTask(): DataLoader<TaskKeyPair, RecordingRow[], string> {
    const { db, allowedServiceCodes, allowedUserName } = this
    return (this.madeRecordings ??= new DataLoader<TaskKeyPair, RecordingRow[], string>(
      async (keys) => {
        const found = await recordingsOfTasks(db, keys, allowedServiceCodes, allowedUserName)
        return keys.map((key) => found.get(taskCacheKey(key)) ?? [])
      },
      { maxBatchSize: MAX_BATCH, cacheKeyFn: taskCacheKey },
    ))
  }

  get notification(): DataLoader<number, NotificationRow | null> {
    const { db, allowedServiceCodes, allowedUserName } = this
    return (this.madeNotification ??= new DataLoader<number, NotificationRow | null>(
      async (ids) => {
        const rows = await notificationsByIds(db, ids, allowedServiceCodes, allowedUserName)
        const byId = new Map(rows.map((row) => [row.id, row]))
        return ids.map((id) => byId.get(id) ?? null)
      },
      { maxBatchSize: MAX_BATCH },
    ))
  }

  get action(): DataLoader<number, OwnedActionRow | null> {
    return (this.madeAction ??= byIds(actionsByIds.bind(null, this.db)))
  }

  get incident(): DataLoader<number, OwnedIncidentRow | null> {
    return (this.madeIncident ??= byIds(incidentsByIds.bind(null, this.db)))
  }

  get recording(): DataLoader<RecordingKey, RecordingRow | null, string> {
    const { db } = this
    return (this.madeRecording ??= new DataLoader<RecordingKey, RecordingRow | null, string>(
      async (keys) => {
        const byKey = new Map((await recordingsByKeys(db, keys)).map((row) => [recordingCacheKey(row), row]))
        return keys.map((key) => byKey.get(recordingCacheKey(key)) ?? null)
      },
      { maxBatchSize: MAX_BATCH, cacheKeyFn: recordingCacheKey },
    ))
  }

  notificationsOfTask(perTask: number): DataLoader<string, NotificationRow[]> {
    const { db, allowedServiceCodes, allowedUserName } = this
    return memo(
      (this.byPerTask ??= new Map()),
      String(perTask),
      () =>
        new DataLoader<string, NotificationRow[]>(
          async (taskIds) => {
            const found = await latestNotificationsForTasks(db, taskIds, perTask, allowedServiceCodes, allowedUserName)
            return taskIds.map((id) => found.get(id) ?? [])
          },
          { maxBatchSize: MAX_BATCH },
        ),
    )
  }

  tasksOfUser(page: UserTasksPage): DataLoader<UserKeyPair, TaskRow[], string> {
    const { db } = this
    const filter = this.scoped(page.filter)
    return memo(
      (this.byUserPage ??= new Map()),
      JSON.stringify([page.filter, page.after, page.fetch]),
      () =>
        new DataLoader<UserKeyPair, TaskRow[], string>(
          async (owners) => {
            const found = await tasksOfUsers(db, owners, filter, page.after, page.fetch)
            return owners.map((owner) => found.get(userKey(owner)) ?? [])
          },
          { maxBatchSize: MAX_BATCH, cacheKeyFn: userKey },
        ),
    )
  }

  taskCountOfUser(filter: TaskQuery): DataLoader<UserKeyPair, number, string> {
    const { db } = this
    const scoped = this.scoped(filter)
    return memo(
      (this.byUserFilter ??= new Map()),
      JSON.stringify(filter),
      () =>
        new DataLoader<UserKeyPair, number, string>(
          async (owners) => {
            const counts = await countTasksOfUsers(db, owners, scoped)
            return owners.map((owner) => counts.get(userKey(owner)) ?? 0)
          },
          { maxBatchSize: MAX_BATCH, cacheKeyFn: userKey },
        ),
    )
  }

  private scoped(filter: TaskQuery): TaskQuery {
    return { ...filter, allowedServiceCodes: this.allowedServiceCodes, allowedUserName: this.allowedUserName }
  }
}

// Rows by their ids in one statement per tick, each id's row or null.
function byIds<R extends { id: number }>(read: (ids: readonly number[]) => Promise<R[]>): DataLoader<number, R | null> {
  return new DataLoader<number, R | null>(
    async (ids) => {
      const byId = new Map((await read(ids)).map((row) => [row.id, row]))
      return ids.map((id) => byId.get(id) ?? null)
    },
    { maxBatchSize: MAX_BATCH },
  )
}

function memo<V>(cache: Map<string, V>, key: string, make: () => V): V {
  let value = cache.get(key)
  if (value === undefined) {
    value = make()
    cache.set(key, value)
  }
  return value
}
