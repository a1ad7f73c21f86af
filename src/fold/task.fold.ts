import type { FoldFacts } from '../model/callback.kinds.js'
import type { UpstreamTask } from '../model/task-list.schema.js'
import { type CallbackEvent, factsOf, type TaskSightingEvent } from './fold.event.js'
import { addLatest, later, maxOf, minOf, type Register, type Stamp } from './lattice.rules.js'

// What a task's state keeps of each kind: the values its entry in model/callback.kinds.ts folds,
// beside when it arrived.

/** A type 0 notification, as kept in a task's state. */
export type StartFacts = FoldFacts<'LIVE_START'> & { receivedAt: number }

/** A type 1 notification; `reach_end` is required of it. */
export type EndFacts = FoldFacts<'LIVE_END'> & { reachEnd: boolean; receivedAt: number }

/** A type 2 notification: an archived file. */
export type RecordingFacts = FoldFacts<'ARCHIVED'> & { receivedAt: number }

/** A type 9 notification. */
export type ThumbnailFacts = FoldFacts<'THUMBNAIL'> & { receivedAt: number }

/** One output format's own start and end. */
export interface OutputState {
  start: Register<StartFacts> | null
  end: Register<EndFacts> | null
}

/** What task_list answers said of the task over time. */
export interface TaskSighting {
  firstSeenAt: number | null
  lastSeenAt: number | null
  /** The latest successful answer that did not list the task. */
  lastAbsentAt: number | null
  task: Register<UpstreamTask> | null
}

/**
 * Everything known of one task, as plain JSON (it is stored as such). Only lattice pieces:
 * see lattice.ts for why.
 */
export interface TaskState {
  v: 1
  serviceCode: string
  taskId: string
  firstCreatedAt: number | null
  firstEventAt: number | null
  author: Register<string> | null
  vsId: Register<string> | null
  start: Register<StartFacts> | null
  end: Register<EndFacts> | null
  resume: Register<number> | null
  outputs: Record<string, OutputState>
  recordings: Register<RecordingFacts>[]
  thumbnails: Register<ThumbnailFacts>[]
  resumes: Register<number>[]
  sighting: TaskSighting
  /**
   * When the earliest stop livegate asked for and the cloud accepted was asked for (Unix ms);
   * absent in states written before actions existed. Evidence of the audit, not of the log.
   */
  stoppedAt?: number | null
}

/** How many of a task's latest thumbnails, resumes and recordings its state keeps. */
export const KEPT = { thumbnails: 5, resumes: 50, recordings: 100 } as const

/** The state of a task nothing is known of yet. */
export function emptyTaskState(serviceCode: string, taskId: string): TaskState {
  return {
    v: 1,
    serviceCode,
    taskId,
    firstCreatedAt: null,
    firstEventAt: null,
    author: null,
    vsId: null,
    start: null,
    end: null,
    resume: null,
    outputs: {},
    recordings: [],
    thumbnails: [],
    resumes: [],
    sighting: { firstSeenAt: null, lastSeenAt: null, lastAbsentAt: null, task: null },
  }
}

/**
 * Joins the outputs that different sources describe: the tag names the output configuration,
 * the container tells apart outputs sharing a tag. task_list, type 0 and type 1 all carry both.
 */
export function outputKey(tag: string | null | undefined, container: string | null | undefined): string {
  return `${tag ?? ''}|${container ?? ''}`
}

/** Folds one stored callback into a task's state; callbacks without `hashed_id` leave it as is. */
export function applyTaskCallback(state: TaskState, event: CallbackEvent): TaskState {
  const { callback, stamp } = event
  if (callback.taskId !== state.taskId) return state
  const v = callback.values
  const next: TaskState = {
    ...state,
    firstEventAt: minOf(state.firstEventAt, stamp.at),
    author:
      callback.userName && callback.kind !== 'LIVE_RESUME'
        ? later(state.author, { stamp, value: callback.userName })
        : state.author,
    vsId: callback.vsId ? later(state.vsId, { stamp, value: callback.vsId }) : state.vsId,
  }
  const createdAt = callback.createdAt ? callback.createdAt.getTime() : null
  switch (callback.kind) {
    case 'LIVE_START': {
      const facts: StartFacts = factsOf(event, 'LIVE_START')
      next.firstCreatedAt = minOf(state.firstCreatedAt, createdAt)
      next.start = later(state.start, { stamp, value: facts })
      next.outputs = withOutput(state.outputs, outputKey(v.tag, v.format?.container), 'start', { stamp, value: facts })
      return next
    }
    case 'LIVE_END': {
      const facts: EndFacts = { ...factsOf(event, 'LIVE_END'), reachEnd: v.reachEnd === true }
      next.firstCreatedAt = minOf(state.firstCreatedAt, createdAt)
      next.end = later(state.end, { stamp, value: facts })
      next.outputs = withOutput(state.outputs, outputKey(v.tag, v.format?.container), 'end', { stamp, value: facts })
      return next
    }
    case 'ARCHIVED': {
      const facts: RecordingFacts = factsOf(event, 'ARCHIVED')
      next.firstCreatedAt = minOf(state.firstCreatedAt, createdAt)
      next.recordings = addLatest(state.recordings, { stamp, value: facts }, KEPT.recordings)
      return next
    }
    case 'THUMBNAIL': {
      const facts: ThumbnailFacts = factsOf(event, 'THUMBNAIL')
      next.thumbnails = addLatest(state.thumbnails, { stamp, value: facts }, KEPT.thumbnails)
      return next
    }
    case 'LIVE_RESUME': {
      const status = factsOf(event, 'LIVE_RESUME').status ?? 0
      next.resume = later(state.resume, { stamp, value: status })
      next.resumes = addLatest(state.resumes, { stamp, value: status }, KEPT.resumes)
      return next
    }
    default:
      return next
  }
}

function withOutput<K extends keyof OutputState>(
  outputs: Record<string, OutputState>,
  key: string,
  part: K,
  register: NonNullable<OutputState[K]>,
): Record<string, OutputState> {
  const current = Object.hasOwn(outputs, key) ? (outputs[key] as OutputState) : { start: null, end: null }
  const merged = later(current[part] as Register<unknown> | null, register as Register<unknown>)
  if (merged === current[part]) return outputs
  return { ...outputs, [key]: { ...current, [part]: merged } }
}

/** Folds what one successful task_list answer said of the task: listed with its data, or absent. */
export function applyTaskSighting(state: TaskState, event: TaskSightingEvent): TaskState {
  const s = state.sighting
  if (!event.task) return { ...state, sighting: { ...s, lastAbsentAt: maxOf(s.lastAbsentAt, event.takenAt) } }
  const stamp: Stamp = { at: event.takenAt, key: 'task_list' }
  return {
    ...state,
    sighting: {
      firstSeenAt: minOf(s.firstSeenAt, event.takenAt),
      lastSeenAt: maxOf(s.lastSeenAt, event.takenAt),
      lastAbsentAt: s.lastAbsentAt,
      task: later(s.task, { stamp, value: event.task }),
    },
  }
}

/** Folds a stop the cloud accepted (`cancel_task` answered ret 0), asked for at `requestedAt`. */
export function applyTaskStop(state: TaskState, requestedAt: number): TaskState {
  const stoppedAt = minOf(state.stoppedAt ?? null, requestedAt)
  return stoppedAt === state.stoppedAt ? state : { ...state, stoppedAt }
}

/** Whether the latest successful task_list answer about the task listed it. */
export function isListed(state: TaskState): boolean {
  const { lastSeenAt, lastAbsentAt } = state.sighting
  return lastSeenAt !== null && (lastAbsentAt === null || lastSeenAt > lastAbsentAt)
}
