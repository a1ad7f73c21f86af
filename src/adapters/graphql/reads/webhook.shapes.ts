import type { WebhookShapes } from '../../../work/outbound/webhook.enqueuer.js'
import { toGlobalId } from '../global.id.js'
import { notificationNode } from './notification.view.js'

/**
 * A webhook body's `data` in the schema's own names: a callback as the `Notification` GraphQL
 * shapes it (its global `id`, `kind`, the cloud's `taskId`, the kind's typed fields and `fields`
 * as sent), a derived event as its facts with the task's global `id` beside the cloud's `taskId`.
 */
export const webhookShapes: WebhookShapes = {
  notification(row) {
    // The getter of `fields` is enumerable, so JSON.stringify reads it: the body has every field as sent.
    return notificationNode(row)
  },
  event(row) {
    const task = row.taskId === null ? {} : { id: toGlobalId('Task', row.serviceCode, row.taskId), taskId: row.taskId }
    const { action, incident, recording, ...facts } = row.facts as {
      action?: { actionId: number } & Record<string, unknown>
      incident?: { incidentId: number } & Record<string, unknown>
      recording?: { fileName: string } & Record<string, unknown>
    }
    // An action's event carries the action as `Action` shapes it: its global id, beside the task's.
    const shaped = action ? { action: { id: toGlobalId('Action', action.actionId), ...withoutRowId(action) } } : {}
    if (incident) {
      const { incidentId, ...rest } = incident
      return {
        ...task,
        serviceCode: row.serviceCode,
        ...facts,
        incident: { id: toGlobalId('Incident', incidentId), ...rest, serviceCode: row.serviceCode, taskId: row.taskId },
      }
    }
    // A recording's event carries its `Recording` global id.
    if (recording)
      Object.assign(shaped, {
        recording: { id: toGlobalId('Recording', row.serviceCode, recording.fileName), ...recording },
      })
    return { ...task, serviceCode: row.serviceCode, ...facts, ...shaped }
  },
}

function withoutRowId({
  actionId: _rowId,
  ...rest
}: { actionId: number } & Record<string, unknown>): Record<string, unknown> {
  return rest
}
