import { sql } from 'drizzle-orm'
import { bigserial, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import { bytea } from './bytea.column.js'

/** How a stored callback's signature was judged. */
export type SignatureStatus = 'verified' | 'failed' | 'skipped'

/**
 * Every accepted notification callback, one row per distinct callback however often it was
 * delivered. The typed columns are what the graph filters on; `fields`, `query` and `body` keep
 * everything exactly as sent.
 */
export const callbacks = pgTable(
  'callbacks',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    // Identifies a delivery of the same callback again: service code, type, timestamp header, fields.
    dedupeKey: text('dedupe_key').notNull(),
    type: integer('type').notNull(),
    serviceCode: text('service_code').notNull(),
    taskId: text('task_id'),
    userName: text('user_name'),
    vsId: text('vs_id'),
    // `created_at` as the service gave it (the live start).
    serviceCreatedAt: timestamp('service_created_at', { withTimezone: true, mode: 'date' }),
    receivedAt: timestamp('received_at', { withTimezone: true, mode: 'date' }).notNull(),
    lastDeliveredAt: timestamp('last_delivered_at', { withTimezone: true, mode: 'date' }).notNull(),
    deliveries: integer('deliveries').notNull().default(1),
    fields: jsonb('fields').$type<Record<string, string | string[]>>().notNull(),
    method: text('method').notNull(),
    path: text('path').notNull(),
    query: text('query').notNull().default(''),
    body: bytea('body').notNull(),
    headers: jsonb('headers').$type<Record<string, string>>().notNull(),
    remoteAddress: text('remote_address'),
    signature: text('signature').$type<SignatureStatus>().notNull(),
    // The refusal code the signature would have had, when `verify` is `log` and it failed.
    signatureError: text('signature_error'),
  },
  (t) => [
    uniqueIndex('callbacks_dedupe_key_unique').on(t.dedupeKey),
    index('callbacks_service_code_id_idx').on(t.serviceCode, t.id.desc().nullsFirst()),
    index('callbacks_task_id_id_idx').on(t.taskId, t.id.desc().nullsFirst()).where(sql`${t.taskId} is not null`),
    index('callbacks_user_name_id_idx').on(t.userName, t.id.desc().nullsFirst()).where(sql`${t.userName} is not null`),
    index('callbacks_type_id_idx').on(t.type, t.id.desc().nullsFirst()),
    index('callbacks_received_at_idx').on(t.receivedAt.desc().nullsFirst()),
    index('callbacks_service_created_at_idx').on(t.serviceCreatedAt.desc().nullsFirst()),
  ],
)

/** A callback row as read. */
export type CallbackRow = typeof callbacks.$inferSelect
/** A callback row as written. */
export type NewCallbackRow = typeof callbacks.$inferInsert
