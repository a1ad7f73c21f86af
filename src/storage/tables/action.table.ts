import { bigserial, index, integer, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import type { ActionKind, ActionState } from '../../model/action.model.js'

/**
 * The audit of actions: every stop and message asked for through livegate, and every attempt
 * refused before anything was sent (state REFUSED), with who asked, what, when, and what the
 * cloud answered. The message text itself is kept: it is what was said to a broadcaster, and
 * the audit is the one place that says it (logs never carry it).
 */
export const actions = pgTable(
  'actions',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    kind: text('kind').$type<ActionKind>().notNull(),
    serviceCode: text('service_code').notNull(),
    taskId: text('task_id'),
    userName: text('user_name'),
    /** The webhook endpoint a replay or a switch acted on; null for a cloud action. */
    endpoint: text('endpoint'),
    /** A message's text; null for a stop. */
    text: text('text'),
    /** A message's sender name as the cloud shows it. */
    fromName: text('from_name'),
    /** The API key's name; null for the local user (no keys configured). */
    requestedBy: text('requested_by'),
    reason: text('reason'),
    /** The fingerprint of the arguments (action.model.ts argsFingerprint). */
    argsHash: text('args_hash').notNull(),
    idempotencyKey: text('idempotency_key'),
    /** requested_by, or '' for the local user: the unique index needs a value to compare. */
    keyScope: text('key_scope').notNull(),
    state: text('state').$type<ActionState>().notNull(),
    /** The catalogue code an attempt was refused with (FORBIDDEN, RATE_LIMITED); null for an action sent. */
    refusal: text('refusal'),
    ret: integer('ret'),
    message: text('message'),
    /** How many times the cloud was called. */
    attempts: integer('attempts').notNull().default(0),
    requestedAt: timestamp('requested_at', { withTimezone: true, mode: 'date' }).notNull(),
    finishedAt: timestamp('finished_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    uniqueIndex('actions_idempotency_idx').on(t.keyScope, t.idempotencyKey),
    index('actions_requested_at_idx').on(t.requestedAt),
    index('actions_task_idx').on(t.serviceCode, t.taskId, t.id.desc()),
  ],
)

/** An action row as read. */
export type ActionRow = typeof actions.$inferSelect
/** An action row as written. */
export type NewActionRow = typeof actions.$inferInsert
