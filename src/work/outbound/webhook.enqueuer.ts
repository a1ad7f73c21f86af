import type { FastifyBaseLogger } from 'fastify'
import type { WebhookEndpointConfig } from '../../config/webhook.schema.js'
import { EVENT_CHANNEL, LOG_GREW } from '../../model/event.codec.js'
import { callbackEventType, endpointWants } from '../../model/webhook.event.js'
import type { Database, Db } from '../../storage/database.client.js'
import { logEnd, logTail, type NotificationRow } from '../../storage/notification.queries.js'
import { readCheckpoint, saveCheckpoint } from '../../storage/projector.statements.js'
import { endpointsEnabled } from '../../storage/outbound/webhook.queries.js'
import { initWebhookCheckpoint, insertDeliveries, type NewDelivery, tryEnqueueLock, WEBHOOK_CHANNEL, webhookEventsAfter, webhookEventsEnd } from '../../storage/outbound/webhook.statements.js'
import type { WebhookEventRow } from '../../storage/tables/webhook.table.js'
import { notifyOnChannel } from '../../storage/notify.statements.js'

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
  endpoints: readonly WebhookEndpointConfig[]
  shapes: WebhookShapes
  log: Pick<FastifyBaseLogger, 'error' | 'warn'>
  /** Called after a pass put deliveries in line (the workers of this process look at once). */
  onEnqueued: () => void
  batchSize?: number
  tickMs?: number
}

type Pass = { kind: 'busy' } | { kind: 'done'; more: boolean; pending: boolean }

/** A callback's event id; also its `webhook-id`. */
export const callbackEventId = (id: number): string => `cb_${id}`
/** A derived event's id; also its `webhook-id`. */
export const derivedEventId = (id: number): string => `ev_${id}`

/**
 * Turns the callbacks log and the derived events into deliveries, one per matching endpoint,
 * after the callbacks are acknowledged and never in their way. One transaction per pass under an
 * advisory lock: the deliveries and the two checkpoints commit together, so an event is put in
 * line once, whichever instance runs the pass. Woken by the log's doorbell and every `tickMs`
 * (derived events ring no bell of their own).
 */
export class WebhookEnqueuer {
  private readonly batchSize: number
  private running: Promise<void> | undefined
  private again = false
  private stopped = false
  private timer: NodeJS.Timeout | undefined
  private unlisten: (() => Promise<void>) | undefined

  constructor(private readonly options: EnqueuerOptions) {
    this.batchSize = options.batchSize ?? 500
  }

  /**
   * Sets the checkpoints at the logs' ends on a first start (what was logged before webhooks
   * were configured is not sent), before the gateway takes any callback, then starts listening.
   */
  async start(): Promise<void> {
    const { db } = this.options.database
    const now = new Date()
    await initWebhookCheckpoint(db, WEBHOOK_CALLBACKS_CHECKPOINT, await logEnd(db), now)
    await initWebhookCheckpoint(db, WEBHOOK_EVENTS_CHECKPOINT, await webhookEventsEnd(db), now)
    this.unlisten = await this.options.database.listen(EVENT_CHANNEL, (payload) => {
      if (payload === LOG_GREW) this.wake()
    })
    this.schedule(0)
  }

  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    await this.unlisten?.()
    await this.running
  }

  /** Enqueues until nothing final is left behind the checkpoints: what tests wait on. */
  async catchUp(): Promise<void> {
    for (;;) {
      await this.running
      const pass = await this.pass()
      if (pass.kind === 'done' && !pass.more && !pass.pending) return
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }

  wake(): void {
    if (this.stopped) return
    if (this.running) {
      this.again = true
      return
    }
    this.running = this.loop().finally(() => {
      this.running = undefined
    })
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return
    if (this.timer) clearTimeout(this.timer)
    this.timer = setTimeout(() => this.wake(), delayMs)
    this.timer.unref()
  }

  private async loop(): Promise<void> {
    let retryMs = this.options.tickMs ?? 500
    try {
      for (;;) {
        this.again = false
        const pass = await this.pass()
        if (pass.kind === 'done' && pass.more) continue
        if (pass.kind === 'done' && pass.pending) retryMs = 25
        if (!this.again) break
      }
    } catch (error) {
      this.options.log.warn({ err: error }, 'webhooks: events could not be put in line; retrying')
      retryMs = 1000
    }
    this.schedule(retryMs)
  }

  private async pass(): Promise<Pass> {
    const { database, endpoints, shapes } = this.options
    let enqueued = 0
    const pass = await database.db.transaction(async (raw): Promise<Pass> => {
      const tx = raw as unknown as Db
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
        let text: string | undefined
        for (const endpoint of endpoints) {
          if (!endpointWants(endpoint, type, serviceCode)) continue
          text ??= body()
          const enabled = enabledByName.get(endpoint.name) ?? true
          deliveries.push({ endpoint: endpoint.name, eventId, eventType: type, serviceCode, body: text, status: enabled ? 'PENDING' : 'DEAD' })
        }
      }
      for (const row of callbacks.rows) {
        const type = callbackEventType(row.type)
        put(callbackEventId(row.id), type, row.serviceCode, () =>
          JSON.stringify({ type, timestamp: row.receivedAt, position: { log: 'callbacks', xid: row.xid, id: row.id }, data: shapes.notification(row) }),
        )
      }
      for (const row of events.rows) {
        put(derivedEventId(row.id), row.type, row.serviceCode, () =>
          JSON.stringify({ type: row.type, timestamp: row.occurredAt, position: { log: 'events', xid: row.xid, id: row.id }, data: shapes.event(row) }),
        )
      }
      await insertDeliveries(tx, deliveries)
      const lastCallback = callbacks.rows.at(-1)
      const lastEvent = events.rows.at(-1)
      if (lastCallback) await saveCheckpoint(tx, WEBHOOK_CALLBACKS_CHECKPOINT, lastCallback, now)
      if (lastEvent) await saveCheckpoint(tx, WEBHOOK_EVENTS_CHECKPOINT, lastEvent, now)
      if (deliveries.length > 0) await tx.execute(notifyOnChannel(WEBHOOK_CHANNEL, 'due'))
      enqueued = deliveries.length
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
