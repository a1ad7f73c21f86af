import type { TaskNode } from '../../fold/graph.model.js'

/** A value with every `Date` in it as epoch milliseconds, as it is kept in JSON. */
export type EpochDates<T> = T extends Date
  ? number
  : T extends Array<infer E>
    ? Array<EpochDates<E>>
    : T extends object
      ? { [K in keyof T]: EpochDates<T[K]> }
      : T

/**
 * A task's graph node as `tasks.node` keeps it, written with the state it is derived from: a
 * read shows it as it comes, without folding the state again. Its times are epoch milliseconds,
 * which the `DateTime` scalar writes as it writes a `Date`.
 */
export type StoredTaskNode = EpochDates<TaskNode>

/** A derived node in its stored form. */
export function storedTaskNode(node: TaskNode): StoredTaskNode {
  return epochDates(node) as StoredTaskNode
}

function epochDates(value: unknown): unknown {
  if (value instanceof Date) return value.getTime()
  if (Array.isArray(value)) return value.map(epochDates)
  if (value === null || typeof value !== 'object') return value
  const out: Record<string, unknown> = {}
  for (const [key, inner] of Object.entries(value)) out[key] = epochDates(inner)
  return out
}

/**
 * A task as the graph answers it: derived just now (times as `Date`s) or read as stored (times
 * as epoch milliseconds). The `DateTime` scalar writes both alike; code that computes with a
 * time reads it through {@link epochOf}.
 */
export type TaskView = TaskNode | StoredTaskNode

/** A time of a {@link TaskView} as epoch milliseconds, whichever form it came in. */
export function epochOf(time: Date | number | null | undefined): number | null {
  if (time === null || time === undefined) return null
  return typeof time === 'number' ? time : time.getTime()
}
