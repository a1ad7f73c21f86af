import { deriveStatus, deriveTask } from './task.derive.js'
import type { TaskState } from './task.fold.js'

/**
 * What livegate derives for the outside world, pure: a task that started or ended (from its
 * states before and after a fold), its sampled health that changed, a callback the cloud never
 * sent, a task list gone stale or back. Each is written in the transaction of the change that
 * derives it (webhook_events), so it is told once, or never if that change does not commit.
 */
export interface DerivedEvent {
  type:
    | 'task.started'
    | 'task.ended'
    | 'task.health_changed'
    | 'task.callback_missing'
    | 'upstream.stale'
    | 'upstream.recovered'
  serviceCode: string
  taskId: string | null
  occurredAt: Date
  /** In the schema's own names (the `Task` fields, `NotificationKind`, `HealthState`). */
  facts: Record<string, unknown>
}

/** A task's fields as the graph names them, for a body (its `id` and `taskId` are added by the shape). */
function taskFacts(state: TaskState): Record<string, unknown> {
  const task = deriveTask(state)
  return {
    status: task.status,
    endReason: task.endReason,
    userName: task.author,
    vsId: task.vsId,
    startedAt: task.startedAt,
    endedAt: task.endedAt,
    listed: task.listed,
  }
}

/**
 * The start or end a fold made of a task: started when it becomes LIVE from nothing known (or
 * from ENDED: a new start), not when it resumes from WAITING_RECONNECT; ended when it becomes
 * ENDED, with its `endReason` (`VANISHED` when it left the task list without a type 1).
 */
export function taskTransitions(before: TaskState | undefined, after: TaskState, now: Date): DerivedEvent[] {
  const was = before ? deriveStatus(before) : undefined
  const is = deriveStatus(after)
  if (was?.status === is.status) return []
  const base = { serviceCode: after.serviceCode, taskId: after.taskId, occurredAt: now }
  if (is.status === 'LIVE' && was?.status !== 'WAITING_RECONNECT')
    return [{ ...base, type: 'task.started', facts: taskFacts(after) }]
  if (is.status === 'ENDED' && (was !== undefined || is.endReason !== null))
    return [{ ...base, type: 'task.ended', facts: taskFacts(after) }]
  return []
}

/** What one sampled answer told of health and reconciliation, as events. */
export function sampledTransitions(
  serviceCode: string,
  samples: {
    healthChanges: ReadonlyArray<{ taskId: string; from: string; to: string }>
    missing: ReadonlyArray<{ taskId: string; kind: 'LIVE_START' | 'LIVE_END' }>
  },
  at: Date,
  graceMs: number,
): DerivedEvent[] {
  const events: DerivedEvent[] = []
  for (const change of samples.healthChanges) {
    const reason =
      change.to === 'STARVING'
        ? 'its input bytes did not grow between two task_list answers'
        : 'its input bytes grow again'
    events.push({
      type: 'task.health_changed',
      serviceCode,
      taskId: change.taskId,
      occurredAt: at,
      facts: { from: change.from, to: change.to, reason },
    })
  }
  for (const missing of samples.missing) {
    const reason =
      missing.kind === 'LIVE_START'
        ? 'listed live with no type 0 within the grace'
        : 'gone from the task list with no type 1 within the grace'
    events.push({
      type: 'task.callback_missing',
      serviceCode,
      taskId: missing.taskId,
      occurredAt: at,
      facts: { kind: missing.kind, graceMs, reason },
    })
  }
  return events
}
