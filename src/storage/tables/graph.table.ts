import { sql } from 'drizzle-orm'
import {
  bigint,
  bigserial,
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core'
import type { TaskState } from '../../fold/task.fold.js'
import type { UserState } from '../../fold/user.fold.js'
import type { StoredTaskNode } from './task.node.js'
import { foldCaseSql } from './text.match.js'

/**
 * One row per task: the fold's state (derived data, rebuilt from callbacks and sightings) and
 * the columns the `tasks` query filters and sorts on, extracted from it on every write.
 */
export const tasks = pgTable(
  'tasks',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    serviceCode: text('service_code').notNull(),
    taskId: text('task_id').notNull(),
    state: jsonb('state').$type<TaskState>().notNull(),
    // The state's graph node, derived on every write: a read shows it without folding again.
    // Null on rows written before it existed, until their next write.
    node: jsonb('node').$type<StoredTaskNode>(),
    status: text('status').notNull(),
    endReason: text('end_reason'),
    author: text('author'),
    listed: boolean('listed').notNull(),
    // The live start, else first sight: what "newest first" means.
    sortAt: timestamp('sort_at', { withTimezone: true, mode: 'date' }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    uniqueIndex('tasks_service_code_task_id_unique').on(t.serviceCode, t.taskId),
    index('tasks_task_id_idx').on(t.taskId),
    index('tasks_sort_idx').on(t.sortAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    index('tasks_service_code_sort_idx').on(t.serviceCode, t.sortAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    index('tasks_status_sort_idx').on(t.status, t.sortAt.desc().nullsFirst(), t.id.desc().nullsFirst()),
    index('tasks_author_sort_idx')
      .on(t.author, t.sortAt.desc().nullsFirst(), t.id.desc().nullsFirst())
      .where(sql`${t.author} is not null`),
    index('tasks_listed_idx').on(t.serviceCode).where(sql`${t.listed}`),
    // TaskFilter.userName: a case-folded prefix (src/storage/text.match.ts) read off an index.
    index('tasks_author_prefix_idx').on(sql`${foldCaseSql(t.author)} text_pattern_ops`),
  ],
)

/** One row per user of a service code, like {@link tasks}. */
export const users = pgTable(
  'users',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    serviceCode: text('service_code').notNull(),
    userName: text('user_name').notNull(),
    state: jsonb('state').$type<UserState>().notNull(),
    online: boolean('online').notNull(),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true, mode: 'date' }),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    uniqueIndex('users_service_code_user_name_unique').on(t.serviceCode, t.userName),
    index('users_service_code_id_idx').on(t.serviceCode, t.id.desc().nullsFirst()),
    index('users_online_idx').on(t.serviceCode).where(sql`${t.online}`),
    index('users_user_name_prefix_idx').on(sql`${foldCaseSql(t.userName)} text_pattern_ops`),
  ],
)

/**
 * How many tasks each (service code, status) has, as changes: triggers on `tasks` (migration
 * 0008) append what a statement inserted or deleted and each status a task moved from and to, so
 * no two writers ever wait on one counter row, and the projector folds the rows into one per pair now and then.
 * `totalCount`
 * of a page filtered only by code and status sums a few of these rows instead of counting every
 * task: a deployment's tasks grow with its log, a page's cost should not.
 */
export const taskCounts = pgTable(
  'task_counts',
  {
    serviceCode: text('service_code').notNull(),
    status: text('status').notNull(),
    n: bigint('n', { mode: 'number' }).notNull(),
  },
  (t) => [index('task_counts_key_idx').on(t.serviceCode, t.status)],
)

/** The health of each service code's task_list, as the poller last saw it (shared by instances). */
export const upstreamStatus = pgTable('upstream_status', {
  serviceCode: text('service_code').primaryKey(),
  lastPollAt: timestamp('last_poll_at', { withTimezone: true, mode: 'date' }),
  lastSuccessAt: timestamp('last_success_at', { withTimezone: true, mode: 'date' }),
  lastErrorAt: timestamp('last_error_at', { withTimezone: true, mode: 'date' }),
  lastErrorKind: text('last_error_kind'),
  lastErrorMessage: text('last_error_message'),
  lastRet: integer('last_ret'),
  lastLatencyMs: integer('last_latency_ms'),
  taskCount: integer('task_count'),
  userCount: integer('user_count'),
  // Failed polls since the last success: the poller's back-off, kept here so a new lease holder
  // goes on backing off rather than starting over.
  consecutiveFailures: integer('consecutive_failures').notNull().default(0),
  nextPollAt: timestamp('next_poll_at', { withTimezone: true, mode: 'date' }),
})

/** A task row as read. */
export type TaskRow = typeof tasks.$inferSelect
/** A user row as read. */
export type UserRow = typeof users.$inferSelect
/** An upstream status row as read. */
export type UpstreamStatusRow = typeof upstreamStatus.$inferSelect
