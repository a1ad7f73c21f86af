import { bigserial, index, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core'
import { bytea } from './bytea.column.js'

/**
 * Every delivery livegate refused (but an oversized body), so an operator can see what was sent
 * and why it was not kept. The body is capped; `bodySize` says how large it was.
 */
export const refusals = pgTable(
  'refusals',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    receivedAt: timestamp('received_at', { withTimezone: true, mode: 'date' }).notNull(),
    reason: text('reason').notNull(),
    message: text('message').notNull(),
    method: text('method').notNull(),
    path: text('path').notNull(),
    query: text('query').notNull().default(''),
    body: bytea('body').notNull(),
    bodySize: integer('body_size').notNull(),
    headers: jsonb('headers').$type<Record<string, string>>().notNull(),
    remoteAddress: text('remote_address'),
    serviceCode: text('service_code'),
    type: text('type'),
    /** The source the refusal is counted under (an IPv4 address, an IPv6 /64): its rate across workers. */
    sourceKey: text('source_key'),
  },
  (t) => [
    index('refusals_received_at_idx').on(t.receivedAt.desc()),
    index('refusals_reason_idx').on(t.reason, t.id.desc()),
    index('refusals_source_idx').on(t.sourceKey, t.receivedAt),
  ],
)

/** A refusal row as read. */
export type RefusalRow = typeof refusals.$inferSelect
/** A refusal row as written. */
export type NewRefusalRow = typeof refusals.$inferInsert
