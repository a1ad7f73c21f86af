import { sql } from 'drizzle-orm'
import { bigserial, doublePrecision, index, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'

/** Where an incident stands. */
export type IncidentStateValue = 'OPEN' | 'ACKNOWLEDGED' | 'RESOLVED'

/** Why an incident resolved: its condition cleared, its task ended, or its rule is gone. */
export type IncidentResolution = 'cleared' | 'task-ended' | 'rule-removed'

/**
 * Incidents: one rule's condition held for one subject (a task, or a service code when
 * `task_id` is null). The partial unique index is the one rule "at most one open incident per
 * rule and subject": two instances or workers that decide the same opening meet there, and only
 * the one whose row went in tells it.
 */
export const incidents = pgTable(
  'incidents',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    rule: text('rule').notNull(),
    severity: text('severity').$type<'INFO' | 'WARNING' | 'CRITICAL'>().notNull(),
    state: text('state').$type<IncidentStateValue>().notNull(),
    serviceCode: text('service_code').notNull(),
    taskId: text('task_id'),
    /** The signal the rule watched (`task.health`, …): what the evidence is read from. */
    signal: text('signal').notNull(),
    summary: text('summary').notNull(),
    value: doublePrecision('value'),
    threshold: doublePrecision('threshold'),
    startedAt: timestamp('started_at', { withTimezone: true, mode: 'date' }).notNull(),
    openedAt: timestamp('opened_at', { withTimezone: true, mode: 'date' }).notNull(),
    acknowledgedAt: timestamp('acknowledged_at', { withTimezone: true, mode: 'date' }),
    acknowledgedBy: text('acknowledged_by'),
    note: text('note'),
    resolvedAt: timestamp('resolved_at', { withTimezone: true, mode: 'date' }),
    resolution: text('resolution').$type<IncidentResolution>(),
  },
  (t) => [
    uniqueIndex('incidents_open_idx')
      .on(t.rule, t.serviceCode, sql`coalesce(${t.taskId}, '')`)
      .where(sql`${t.state} <> 'RESOLVED'`),
    index('incidents_code_idx').on(t.serviceCode, t.id.desc()),
    index('incidents_task_idx').on(t.serviceCode, t.taskId, t.id.desc()).where(sql`${t.taskId} is not null`),
  ],
)

/** An incident row as read. */
export type IncidentRow = typeof incidents.$inferSelect
/** An incident row as written. */
export type NewIncidentRow = typeof incidents.$inferInsert
