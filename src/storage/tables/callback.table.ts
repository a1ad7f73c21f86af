import { sql } from 'drizzle-orm'
import { bigint, bigserial, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import type { CallbackValues } from '../../model/callback.parse.js'
import type { SignatureStatus } from '../../model/callback.record.js'
import { bytea } from './bytea.column.js'
import { CURRENT_XACT_ID, xid8 } from './xid8.column.js'

/**
 * The log: every accepted notification callback, one row per distinct callback however often it
 * was delivered. `xid` (the writing transaction) and `id` are its position; `values` holds the
 * typed values parsed at ingest; path, query, body and the kept headers are the request as sent.
 * Indexes are only those a query reads by: the position (lists, replay, projection), a task's and
 * a user's notifications, and the dedupe key.
 */
export const callbacks = pgTable(
  'callbacks',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    xid: xid8('xid').notNull().default(CURRENT_XACT_ID),
    dedupeKey: text('dedupe_key').notNull(),
    type: integer('type').notNull(),
    serviceCode: text('service_code').notNull(),
    taskId: text('task_id'),
    userName: text('user_name'),
    vsId: text('vs_id'),
    serviceCreatedAt: timestamp('service_created_at', { withTimezone: true, mode: 'date' }),
    signedAt: timestamp('signed_at', { withTimezone: true, mode: 'date' }),
    receivedAt: timestamp('received_at', { withTimezone: true, mode: 'date' }).notNull(),
    lastDeliveredAt: timestamp('last_delivered_at', { withTimezone: true, mode: 'date' }).notNull(),
    deliveries: integer('deliveries').notNull().default(1),
    values: jsonb('values').$type<CallbackValues>().notNull(),
    method: text('method').notNull(),
    path: text('path').notNull(),
    query: text('query').notNull().default(''),
    body: bytea('body').notNull(),
    headers: jsonb('headers').$type<Record<string, string>>().notNull(),
    remoteAddress: text('remote_address'),
    signature: text('signature').$type<SignatureStatus>().notNull(),
    signatureError: text('signature_error'),
    /** The W3C traceparent of the span that committed it (tracing on), for links from its deliveries. */
    traceparent: text('traceparent'),
  },
  (t) => [
    uniqueIndex('callbacks_dedupe_key_unique').on(t.dedupeKey),
    index('callbacks_position_idx').on(t.xid, t.id),
    index('callbacks_task_position_idx').on(t.taskId, t.xid, t.id).where(sql`${t.taskId} is not null`),
    index('callbacks_user_position_idx').on(t.userName, t.xid, t.id).where(sql`${t.userName} is not null`),
  ],
)

/**
 * How far the projection has folded the log: one row per projection, at the position of the last
 * callback it folded.
 */
export const projections = pgTable('projections', {
  name: text('name').primaryKey(),
  xid: xid8('xid').notNull(),
  id: bigint('id', { mode: 'number' }).notNull(),
  updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
})

/** A callback row as read. */
export type CallbackRow = typeof callbacks.$inferSelect
