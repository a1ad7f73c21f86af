import type { FastifyBaseLogger } from 'fastify'
import type { WebhookEndpointConfig } from '../../config/webhook.schema.js'
import { callbackEventType, endpointWants } from '../../model/webhook.event.js'
import type { Database } from '../../storage/database.client.js'
import { logTail, type NotificationRow } from '../../storage/notification.queries.js'
import { initCheckpoint, logEnd, readCheckpoint, saveCheckpoint } from '../../storage/log.kernel.js'
import { endpointsEnabled } from '../../storage/outbound/webhook.queries.js'
import {
  insertDeliveries,
  type NewDelivery,
  tryEnqueueLock,
  webhookEventsAfter,
  webhookEventsEnd,
} from '../../storage/outbound/webhook.statements.js'
import { WEBHOOK_CHANNEL } from '../../model/notify.channels.js'
import type { WebhookEventRow } from '../../storage/tables/webhook.table.js'
import { notifyOnChannel } from '../../storage/notify.statements.js'
import { type PassOutcome, PassScheduler } from '../pass.scheduler.js'
import type { ChannelListener } from '../channel.listener.js'

/** The enqueuer's checkpoints in the projections table: one per log it reads. */
export const WEBHOOK_CALLBACKS_CHECKPOINT = 'webhooks:callbacks'
export const WEBHOOK_EVENTS_CHECKPOINT = 'webhooks:events'

/**
 * How a body's `data` is shaped from what was stored, in the schema's own names. Given by the
 * assembly: the shapes are GraphQL's (adapters), which this floor does not import.
 */
export interface WebhookShapes {
  notification(row: NotificationRow): Record<string, unknown>
  event(row: WebhookEventRow): Record<string, unknown>
}

/** What {@link WebhookEnqueuer} is built from. */
export interface EnqueuerOptions {
  database: Database
  /** The process's listener: the log's doorbell wakes a pass. */
  channels: Pick<ChannelListener, 'on'>
  endpoints: readonly WebhookEndpointConfig[]
  shapes: WebhookShapes
  log: Pick<FastifyBaseLogger, 'error' | 'warn'>
  /** Called after a pass put deliveries in line (the workers of this process look at once). */
  onEnqueued: () => void
  batchSize?: number
  tickMs?: number
}

/** A callback's event id; also its `webhook-id`. */
export const callbackEventId = (id: number): string => `cb_${id}`
/** A derived event's id; also its `webhook-id`. */
export const derivedEventId = (id: number): string => `ev_${id}`

/**
 * Turns the callbacks log and the derived events into deliveries, one per matching endpoint,
 * after the callbacks are acknowledged and never in their way. One transaction per pass under an
 * advisory lock: the deliveries and the two checkpoints commit together, so an event is put in
 * line once, whichever instance runs the pass. Its passes run at the log's doorbell and every `tickMs`
 * ({@link PassScheduler}; derived events ring no bell of their own).
 */
export class WebhookEnqueuer {
  private readonly batchSize: number
  private readonly scheduler: PassScheduler

  constructor(private readonly options: EnqueuerOptions) {
    this.batchSize = options.batchSize ?? 500
    this.scheduler = new PassScheduler({
      channels: options.channels,
      pass: () => this.pass(),
      tickMs: options.tickMs ?? 500,
      onError: (error) => options.log.warn({ err: error }, 'webhooks: events could not be put in line; retrying'),
    })
  }

  /**
   * Sets the checkpoints at the logs' ends on a deployment's first start with endpoints (what was
   * logged before webhooks were configured is not sent); a checkpoint already set is kept, so a
   * restart replays nothing. Every process of the deployment sets them before it takes any
   * callback, whether it puts events in line or not: under `serve --workers N` the HTTP workers
   * serve before the webhook worker has started, and what they kept meanwhile must be told.
   */
  async setStart(): Promise<void> {
    const { db } = this.options.database
    const now = new Date()
    await initCheckpoint(db, WEBHOOK_CALLBACKS_CHECKPOINT, await logEnd(db), now)
    await initCheckpoint(db, WEBHOOK_EVENTS_CHECKPOINT, await webhookEventsEnd(db), now)
  }

  /** Starts the passes, from the checkpoints {@link setStart} set. */
  start(): Promise<void> {
    return this.scheduler.start()
  }

  stop(): Promise<void> {
    return this.scheduler.stop()
  }

  /** Enqueues until nothing final is left behind the checkpoints: what tests wait on. */
  catchUp(): Promise<void> {
    return this.scheduler.catchUp()
  }

  wake(): void {
    this.scheduler.wake()
  }

  private async pass(): Promise<PassOutcome> {
    const { database, endpoints, shapes } = this.options
    let enqueued = 0
    const pass = await database.db.transaction(async (tx): Promise<PassOutcome> => {
      if (!(await tryEnqueueLock(tx))) return { kind: 'busy' }
      const now = new Date()
      const fromCallbacks = await readCheckpoint(tx, WEBHOOK_CALLBACKS_CHECKPOINT)
      const fromEvents = await readCheckpoint(tx, WEBHOOK_EVENTS_CHECKPOINT)
      const callbacks = await logTail(tx, fromCallbacks, this.batchSize)
      const events = await webhookEventsAfter(tx, fromEvents, this.batchSize)
      const enabledByName = await endpointsEnabled(
        tx,
        endpoints.map((endpoint) => endpoint.name),
      )
      const deliveries: NewDelivery[] = []
      const put = (eventId: string, type: string, serviceCode: string, body: () => string) => {
        const to: Array<{ endpoint: string; status: 'PENDING' | 'DEAD' }> = []
        for (const endpoint of endpoints) {
          if (!endpointWants(endpoint, type, serviceCode)) continue
          const enabled = enabledByName.get(endpoint.name) ?? true
          to.push({ endpoint: endpoint.name, status: enabled ? 'PENDING' : 'DEAD' })
        }
        // Serialized once per event, whatever the number of endpoints that want it.
        if (to.length > 0) deliveries.push({ eventId, eventType: type, serviceCode, body: body(), to })
      }
      for (const row of callbacks.rows) {
        const type = callbackEventType(row.type)
        put(callbackEventId(row.id), type, row.serviceCode, () =>
          JSON.stringify({
            type,
            timestamp: row.receivedAt,
            position: { log: 'callbacks', xid: row.xid, id: row.id },
            data: shapes.notification(row),
          }),
        )
      }
      for (const row of events.rows) {
        put(derivedEventId(row.id), row.type, row.serviceCode, () =>
          JSON.stringify({
            type: row.type,
            timestamp: row.occurredAt,
            position: { log: 'events', xid: row.xid, id: row.id },
            data: shapes.event(row),
          }),
        )
      }
      const enqueuedRows = await insertDeliveries(tx, deliveries)
      const lastCallback = callbacks.rows.at(-1)
      const lastEvent = events.rows.at(-1)
      if (lastCallback) await saveCheckpoint(tx, WEBHOOK_CALLBACKS_CHECKPOINT, lastCallback, now)
      if (lastEvent) await saveCheckpoint(tx, WEBHOOK_EVENTS_CHECKPOINT, lastEvent, now)
      if (enqueuedRows > 0) await tx.execute(notifyOnChannel(WEBHOOK_CHANNEL, 'due'))
      enqueued = enqueuedRows
      return {
        kind: 'done',
        more: callbacks.rows.length === this.batchSize || events.rows.length === this.batchSize,
        pending: callbacks.pending || events.pending,
      }
    })
    if (enqueued > 0) this.options.onEnqueued()
    return pass
  }
}
