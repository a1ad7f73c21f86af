import { sql } from 'drizzle-orm'
import { bigserial, boolean, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import { CURRENT_XACT_ID, xid8 } from './xid8.column.js'

/**
 * What livegate derives for the outside world (a task started or ended, its health changed, a
 * callback the cloud never sent, a task list gone stale), written in the same transaction as the
 * change it tells of. A log of its own, in the callbacks log's order (writing transaction, then
 * id), read by the webhook enqueuer only as far as it is final.
 */
export const webhookEvents = pgTable(
  'webhook_events',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    xid: xid8('xid').notNull().default(CURRENT_XACT_ID),
    type: text('type').notNull(),
    serviceCode: text('service_code').notNull(),
    taskId: text('task_id'),
    occurredAt: timestamp('occurred_at', { withTimezone: true, mode: 'date' }).notNull(),
    /** What happened, in the schema's own names (the enqueuer shapes the body from it). */
    facts: jsonb('facts').$type<Record<string, unknown>>().notNull(),
  },
  (t) => [index('webhook_events_position_idx').on(t.xid, t.id), index('webhook_events_occurred_idx').on(t.occurredAt)],
)

/** Each configured endpoint's state: switched on or off, and how its attempts went. */
export const webhookEndpoints = pgTable('webhook_endpoints', {
  name: text('name').primaryKey(),
  enabled: boolean('enabled').notNull().default(true),
  /** Why it was switched off (410, `disableAfter`, an operator). */
  disabledReason: text('disabled_reason'),
  /** Since when every attempt failed; null after a success. */
  failingSince: timestamp('failing_since', { withTimezone: true, mode: 'date' }),
  lastSuccessAt: timestamp('last_success_at', { withTimezone: true, mode: 'date' }),
  lastFailureAt: timestamp('last_failure_at', { withTimezone: true, mode: 'date' }),
  lastError: text('last_error'),
  /** When livegate first saw it configured: it receives events from then on. */
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
})

/** A delivery's state. */
export type DeliveryStatus = 'PENDING' | 'RETRYING' | 'DELIVERED' | 'DEAD'

/**
 * The outbox: one row per event and endpoint, with the body as signed and sent on every attempt.
 * A process claims due rows with `FOR UPDATE SKIP LOCKED` and holds them by a lease
 * (`locked_until`, `owner`): one attempt at a time, and a killed process's is taken over after it.
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    endpoint: text('endpoint').notNull(),
    /** The event's stable id: `webhook-id` on every attempt. */
    eventId: text('event_id').notNull(),
    eventType: text('event_type').notNull(),
    serviceCode: text('service_code').notNull(),
    body: text('body').notNull(),
    status: text('status').$type<DeliveryStatus>().notNull(),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true, mode: 'date' }).notNull(),
    lockedUntil: timestamp('locked_until', { withTimezone: true, mode: 'date' }),
    owner: text('owner'),
    lastStatusCode: integer('last_status_code'),
    lastError: text('last_error'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    deliveredAt: timestamp('delivered_at', { withTimezone: true, mode: 'date' }),
    /** When it was delivered or became a dead letter: what retention ages it by. */
    finishedAt: timestamp('finished_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    uniqueIndex('webhook_deliveries_event_unique').on(t.endpoint, t.eventId),
    // In the claim's own order, id last: a claim reads its batch and stops, however long the line is. Without
    // id the planner sorted every due row at each claim, and a line that grew made each claim costlier.
    index('webhook_deliveries_due_idx')
      .on(t.endpoint, t.nextAttemptAt, t.id)
      .where(sql`${t.status} in ('PENDING', 'RETRYING')`),
    index('webhook_deliveries_status_idx').on(t.endpoint, t.status, t.id),
    index('webhook_deliveries_finished_idx').on(t.finishedAt).where(sql`${t.finishedAt} is not null`),
  ],
)

/** A delivery row as read. */
export type WebhookDeliveryRow = typeof webhookDeliveries.$inferSelect

/** An endpoint's state row as read. */
export type WebhookEndpointRow = typeof webhookEndpoints.$inferSelect

/** A derived event as read. */
export type WebhookEventRow = typeof webhookEvents.$inferSelect
