import type { TaskNode } from '../../fold/graph.model.js'
import { deriveTask } from '../../fold/task.derive.js'
import type { RealtimeEvent } from '../../model/event.codec.js'
import { type IncidentCriteria, incidentMatches, incidentsByIds } from '../../storage/alerts/incident.queries.js'
import type { Db } from '../../storage/database.client.js'
import { type TaskQuery, taskMatches, tasksByKeys } from '../../storage/graph/task.queries.js'
import { type SampledTaskRow, sampledTasks } from '../../storage/history/audience.queries.js'
import type { NotificationCriteria, NotificationRow } from '../../storage/notification.queries.js'
import { type ActionCriteria, actionMatches, actionsByIds } from '../../storage/outbound/action.queries.js'
import type { ActionRow } from '../../storage/tables/action.table.js'
import type { TaskRow } from '../../storage/tables/graph.table.js'
import type { IncidentRow } from '../../storage/tables/incident.table.js'

/** One task's sample at one answer, as `metricsSampled` hands it out. */
/**
 * A task whose timeline may have grown: named by a change of the task, an action or an incident
 * about it, or (its `taskId` null) by an answer of its service code's task list.
 */
export interface TimelineTouch {
  serviceCode: string
  taskId: string | null
}

export interface TaskSampleEvent {
  task: TaskNode
  at: Date
  viewers: number
  inputBitrate: number | null
  outputBitrate: number | null
}

/**
 * The engine's streams: what a subscriber of each chooses by (`filter`), what the engine reads for
 * it (`row`) and what it hands out (`item`). Notifications are read from the log in its order
 * (`realtime.engine.ts`); every other stream reads the rows its events name ({@link ROW_STREAMS}).
 */
export interface Streams {
  notification: { filter: NotificationCriteria; row: NotificationRow; item: NotificationRow }
  task: { filter: TaskQuery; row: TaskRow; item: TaskNode }
  action: { filter: ActionCriteria; row: ActionRow; item: ActionRow }
  incident: { filter: IncidentCriteria; row: IncidentRow; item: IncidentRow }
  sample: { filter: TaskQuery; row: SampledTaskRow; item: TaskSampleEvent }
  /** A task's timeline (`Subscription.taskTimeline`): the subscriber reads what is new of its line. */
  timeline: { filter: { serviceCode: string; taskId: string }; row: TimelineTouch; item: TimelineTouch }
}

export type StreamKind = keyof Streams
/** The streams whose events name rows: each is also the kind of its events (`model/event.codec.ts`). */
export type RowKind = Exclude<StreamKind, 'notification'>
export type StreamFilter<K extends StreamKind> = Streams[K]['filter']
export type StreamItem<K extends StreamKind> = Streams[K]['item']
/** The events a row stream reads its rows by: its own kind's, or those it hears (a timeline hears the others). */
export type EventOf<K extends RowKind> = K extends 'timeline'
  ? Extract<RealtimeEvent, { kind: TimelineHears }>
  : Extract<RealtimeEvent, { kind: K }>
type TimelineHears = 'task' | 'action' | 'incident' | 'sample'

/** How the engine serves one stream of rows. */
export interface RowStream<K extends RowKind> {
  /** The kinds of events its rows are read by, when not its own (a stream with no events of its own). */
  hears?: readonly EventOf<K>['kind'][]
  /** The rows a batch's events name, each read once, in the order they are handed out. */
  read(db: Db, events: readonly EventOf<K>[]): Promise<Array<Streams[K]['row']>>
  /** Whether a row is one a subscriber with this filter receives: asked once per distinct filter. */
  matches(filter: StreamFilter<K>, row: Streams[K]['row']): boolean
  /** What subscribers are handed: made once per row, for every subscriber it matches. */
  item(row: Streams[K]['row']): StreamItem<K>
}

/** Each item once, in first-seen order, by its key. */
function distinct<T>(items: readonly T[], key: (item: T) => string | number): T[] {
  return [...new Map(items.map((item) => [key(item), item])).values()]
}

async function byIds<R extends { id: number }>(
  events: readonly { id: number }[],
  read: (ids: number[]) => Promise<R[]>,
): Promise<R[]> {
  return (await read(distinct(events, (event) => event.id).map((event) => event.id))).sort((a, b) => a.id - b.id)
}

/** The table of row streams: per kind, how its rows are read by the ids its events carry, and matched. */
export const ROW_STREAMS: { readonly [K in RowKind]: RowStream<K> } = {
  task: {
    read: (db, events) =>
      tasksByKeys(
        db,
        distinct(events, (event) => JSON.stringify([event.serviceCode, event.taskId])),
      ),
    matches: taskMatches,
    item: (row) => deriveTask(row.state),
  },
  action: {
    read: (db, events) => byIds(events, (ids) => actionsByIds(db, ids)),
    matches: actionMatches,
    item: (row) => row,
  },
  incident: {
    read: (db, events) => byIds(events, (ids) => incidentsByIds(db, ids)),
    matches: incidentMatches,
    item: (row) => row,
  },
  // One read per sampled answer, in the order they were announced.
  sample: {
    read: async (db, events) => {
      const rows: SampledTaskRow[] = []
      for (const event of distinct(events, (event) => JSON.stringify([event.serviceCode, event.at])))
        rows.push(...(await sampledTasks(db, event.serviceCode, new Date(event.at))))
      return rows
    },
    matches: (filter, row) => taskMatches(filter, row.task),
    item: (row) => ({
      task: deriveTask(row.task.state),
      at: row.at,
      viewers: row.viewers,
      inputBitrate: row.inputBitrate,
      outputBitrate: row.outputBitrate,
    }),
  },
  // Every change that may add to a task's line names the task; one read per action or incident changed.
  timeline: {
    hears: ['task', 'action', 'incident', 'sample'],
    read: async (db, events) => {
      const ids = (kind: 'action' | 'incident') =>
        distinct(
          events.flatMap((event) => (event.kind === kind ? [event.id] : [])),
          (id) => id,
        )
      const [actions, incidents] = await Promise.all([
        ids('action').length > 0 ? actionsByIds(db, ids('action')) : [],
        ids('incident').length > 0 ? incidentsByIds(db, ids('incident')) : [],
      ])
      const touches: TimelineTouch[] = [...actions, ...incidents].flatMap((row) =>
        row.taskId === null ? [] : [{ serviceCode: row.serviceCode, taskId: row.taskId }],
      )
      for (const event of events)
        if (event.kind === 'task' || event.kind === 'sample')
          touches.push({ serviceCode: event.serviceCode, taskId: event.kind === 'task' ? event.taskId : null })
      return distinct(touches, (touch) => JSON.stringify([touch.serviceCode, touch.taskId]))
    },
    matches: (filter, touch) =>
      touch.serviceCode === filter.serviceCode && (touch.taskId === null || touch.taskId === filter.taskId),
    item: (touch) => touch,
  },
}

/** The row streams, in the order a batch's reads are started. */
export const ROW_KINDS: readonly RowKind[] = ['task', 'action', 'incident', 'sample', 'timeline']
