import { sql } from 'drizzle-orm'
import {
  bigint,
  boolean,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
} from 'drizzle-orm/pg-core'

const at = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' })

/**
 * One row per listed task per task_list answer. Range-partitioned by `at` in the migration
 * (drizzle-kit cannot say so): retention drops whole partitions (storage/sample.partitions.ts).
 * `outputs` is per output `[key, viewers, bytes]`; the rates are bits/s since the task's
 * previous sample, null on its first sample and on a counter that went down.
 */
export const taskSamples = pgTable(
  'task_samples',
  {
    serviceCode: text('service_code').notNull(),
    taskId: text('task_id').notNull(),
    at: at('at').notNull(),
    viewers: integer('viewers').notNull(),
    inputBytes: bigint('input_bytes', { mode: 'number' }),
    outputBytes: bigint('output_bytes', { mode: 'number' }),
    inputRate: doublePrecision('input_rate'),
    outputRate: doublePrecision('output_rate'),
    outputs: jsonb('outputs').notNull(),
  },
  (t) => [
    index('task_samples_task_at_idx').on(t.serviceCode, t.taskId, t.at),
    index('task_samples_code_at_idx').on(t.serviceCode, t.at),
    // A task's audience peak (its timeline's "peak" entry) by one index step, not a scan of its day.
    index('task_samples_task_peak_idx').on(t.serviceCode, t.taskId, t.viewers.desc(), t.at),
  ],
)

// A bucket of one task: how many samples, their viewers, and the byte deltas with the seconds
// they cover (a bitrate is bytes × 8 / seconds; a step after a reset adds neither).
const taskBucket = (name: string) =>
  pgTable(
    name,
    {
      serviceCode: text('service_code').notNull(),
      taskId: text('task_id').notNull(),
      at: at('at').notNull(),
      samples: integer('samples').notNull(),
      viewersSum: bigint('viewers_sum', { mode: 'number' }).notNull(),
      viewersMax: integer('viewers_max').notNull(),
      inputBytes: bigint('input_bytes', { mode: 'number' }).notNull(),
      inputSeconds: doublePrecision('input_seconds').notNull(),
      outputBytes: bigint('output_bytes', { mode: 'number' }).notNull(),
      outputSeconds: doublePrecision('output_seconds').notNull(),
    },
    (t) => [primaryKey({ columns: [t.serviceCode, t.taskId, t.at] }), index(`${name}_at_idx`).on(t.at)],
  )

// A bucket of one service code: one sample per answer, its listed (live) tasks and their viewers.
const serviceBucket = (name: string) =>
  pgTable(
    name,
    {
      serviceCode: text('service_code').notNull(),
      at: at('at').notNull(),
      samples: integer('samples').notNull(),
      liveTasksSum: bigint('live_tasks_sum', { mode: 'number' }).notNull(),
      liveTasksMax: integer('live_tasks_max').notNull(),
      viewersSum: bigint('viewers_sum', { mode: 'number' }).notNull(),
      viewersMax: integer('viewers_max').notNull(),
      inputBytes: bigint('input_bytes', { mode: 'number' }).notNull(),
      inputSeconds: doublePrecision('input_seconds').notNull(),
    },
    (t) => [primaryKey({ columns: [t.serviceCode, t.at] }), index(`${name}_at_idx`).on(t.at)],
  )

export const taskMetricsMinute = taskBucket('task_metrics_minute')
export const taskMetricsHour = taskBucket('task_metrics_hour')
export const serviceMetricsMinute = serviceBucket('service_metrics_minute')
export const serviceMetricsHour = serviceBucket('service_metrics_hour')

/**
 * One row per sampled task: its latest sample (what the next one's rates start from), its
 * health, and where the push-vs-poll reconciliation stands for it.
 */
export const taskLive = pgTable(
  'task_live',
  {
    serviceCode: text('service_code').notNull(),
    taskId: text('task_id').notNull(),
    at: at('at').notNull(),
    listed: boolean('listed').notNull(),
    viewers: integer('viewers').notNull(),
    peakViewers: integer('peak_viewers').notNull(),
    inputBytes: bigint('input_bytes', { mode: 'number' }),
    outputBytes: bigint('output_bytes', { mode: 'number' }),
    stillSamples: integer('still_samples').notNull(),
    health: text('health').notNull(),
    healthSince: at('health_since').notNull(),
    firstListedAt: at('first_listed_at').notNull(),
    leftAt: at('left_at'),
    startChecked: boolean('start_checked').notNull(),
    endChecked: boolean('end_checked').notNull(),
    missingStartAt: at('missing_start_at'),
    missingEndAt: at('missing_end_at'),
  },
  (t) => [
    primaryKey({ columns: [t.serviceCode, t.taskId] }),
    // What each answer reads back: the code's listed tasks and those whose checks are pending.
    // No index on `at`, which every answer moves: updates stay HOT (the prune reads the table whole).
    index('task_live_open_idx')
      .on(t.serviceCode)
      .where(sql`${t.listed} or not ${t.startChecked} or not ${t.endChecked}`),
  ],
)
