import { and, eq, sql } from 'drizzle-orm'
import type { SampledHealth } from '../../fold/task.health.js'
import { type Db, resultRows } from '../database.client.js'
import { type TaskRow, tasks } from '../tables/graph.table.js'
import { jsonLiteral } from '../tables/json.rows.js'
import { taskSamples } from '../tables/audience.table.js'

/** The resolution of a series: every sample, or the minute or hour rollups. */
export type MetricStep = 'RAW' | 'MINUTE' | 'HOUR'

/** One point of a task's series. */
export interface MetricPointRow {
  at: Date
  samples: number
  viewers: number | null
  viewersMax: number | null
  inputBitrate: number | null
  outputBitrate: number | null
}

/** One point of a service code's series. */
export interface ServiceMetricPointRow {
  at: Date
  samples: number
  liveTasks: number | null
  viewers: number | null
  viewersMax: number | null
  inputBitrate: number | null
}

interface Window {
  from: Date
  to: Date
}

const TASK_TABLE = { MINUTE: 'task_metrics_minute', HOUR: 'task_metrics_hour' } as const
const SERVICE_TABLE = { MINUTE: 'service_metrics_minute', HOUR: 'service_metrics_hour' } as const

const num = (value: unknown) => (value === null || value === undefined ? null : Number(value))

/** A task's series in `[from, to)`, oldest first: its samples, or its rollups (viewers as the mean, rounded). */
export async function taskAudience(
  db: Db,
  key: { serviceCode: string; taskId: string },
  step: MetricStep,
  window: Window,
): Promise<MetricPointRow[]> {
  const range = sql`service_code = ${key.serviceCode} and task_id = ${key.taskId} and at >=
    ${window.from.toISOString()}::timestamptz and at < ${window.to.toISOString()}::timestamptz`
  const statement =
    step === 'RAW'
      ? sql`select at, 1 as samples, viewers, viewers as viewers_max, input_rate, output_rate from task_samples where
        ${range} order by at`
      : sql`select at, samples, round(viewers_sum::numeric / samples) as viewers, viewers_max,
          case when input_seconds > 0 then input_bytes * 8 / input_seconds end as input_rate,
          case when output_seconds > 0 then output_bytes * 8 / output_seconds end as output_rate
        from ${sql.raw(TASK_TABLE[step])} where ${range} order by at`
  const rows = resultRows<Record<string, unknown>>(await db.execute(statement))
  return rows.map((row) => ({
    at: new Date(row.at as string),
    samples: Number(row.samples),
    viewers: num(row.viewers),
    viewersMax: num(row.viewers_max),
    inputBitrate: num(row.input_rate),
    outputBitrate: num(row.output_rate),
  }))
}

/** A service code's series in `[from, to)`, oldest first; RAW has a point per answer. */
export async function serviceAudience(
  db: Db,
  serviceCode: string,
  step: MetricStep,
  window: Window,
): Promise<ServiceMetricPointRow[]> {
  const range = sql`service_code = ${serviceCode} and at >= ${window.from.toISOString()}::timestamptz and at <
    ${window.to.toISOString()}::timestamptz`
  const statement =
    step === 'RAW'
      ? sql`select at, 1 as samples, count(*) as live_tasks, sum(viewers) as viewers, sum(viewers) as viewers_max,
        sum(input_rate) as input_rate
          from task_samples where ${range} group by at order by at`
      : sql`select at, samples, round(live_tasks_sum::numeric / samples) as live_tasks, round(viewers_sum::numeric /
        samples) as viewers, viewers_max,
          case when input_seconds > 0 then input_bytes * 8 / input_seconds end as input_rate
        from ${sql.raw(SERVICE_TABLE[step])} where ${range} order by at`
  const rows = resultRows<Record<string, unknown>>(await db.execute(statement))
  return rows.map((row) => ({
    at: new Date(row.at as string),
    samples: Number(row.samples),
    liveTasks: num(row.live_tasks),
    viewers: num(row.viewers),
    viewersMax: num(row.viewers_max),
    inputBitrate: num(row.input_rate),
  }))
}

/** What the latest sample and the reconciliation say of one task. */
export interface LiveTaskRow {
  serviceCode: string
  taskId: string
  at: Date
  listed: boolean
  viewers: number
  peakViewers: number
  health: SampledHealth
  healthSince: Date
  missingStart: boolean
  missingEnd: boolean
}

/** The `task_live` rows of some tasks, batched (a page of tasks asks once). */
export async function liveTasksByKeys(
  db: Db,
  keys: ReadonlyArray<{ serviceCode: string; taskId: string }>,
): Promise<LiveTaskRow[]> {
  if (keys.length === 0) return []
  const rows = resultRows<Record<string, unknown>>(
    await db.execute(sql`select l.service_code, l.task_id, l.at, l.listed, l.viewers, l.peak_viewers, l.health,
      l.health_since, l.missing_start_at, l.missing_end_at
      from jsonb_to_recordset(${jsonLiteral(keys.map((k) => ({ c: k.serviceCode, t: k.taskId })))}) as k(c text, t text)
      join task_live l on l.service_code = k.c and l.task_id = k.t`),
  )
  return rows.map((row) => ({
    serviceCode: row.service_code as string,
    taskId: row.task_id as string,
    at: new Date(row.at as string),
    listed: row.listed as boolean,
    viewers: Number(row.viewers),
    peakViewers: Number(row.peak_viewers),
    health: row.health as SampledHealth,
    healthSince: new Date(row.health_since as string),
    missingStart: row.missing_start_at !== null,
    missingEnd: row.missing_end_at !== null,
  }))
}

/** A sample one answer of a code wrote, with its task's row, for `metricsSampled`. */
export interface SampledTaskRow {
  task: TaskRow
  at: Date
  viewers: number
  inputBitrate: number | null
  outputBitrate: number | null
}

/** Every sample a service code's answer taken at `at` wrote, with the task rows. */
export async function sampledTasks(db: Db, serviceCode: string, at: Date): Promise<SampledTaskRow[]> {
  const rows = await db
    .select({
      task: tasks,
      viewers: taskSamples.viewers,
      inputBitrate: taskSamples.inputRate,
      outputBitrate: taskSamples.outputRate,
    })
    .from(taskSamples)
    .innerJoin(tasks, and(eq(tasks.serviceCode, taskSamples.serviceCode), eq(tasks.taskId, taskSamples.taskId)))
    .where(and(eq(taskSamples.serviceCode, serviceCode), eq(taskSamples.at, at)))
  return rows.map((row) => ({ ...row, at }))
}

/** A service code's reconciliation since a time: tasks found missing a start or an end, and callback delays. */
export interface ReconciliationRow {
  missingStart: number
  missingEnd: number
  delayP50Ms: number | null
  delayP99Ms: number | null
}

// The latest callbacks the delays are taken from (of every code): a bounded walk back along the
// log's position index, so no index on received_at has to be kept for this.
const DELAY_WINDOW = 20_000

/** The reconciliation of a service code since `since`. */
export async function reconciliation(db: Db, serviceCode: string, since: Date): Promise<ReconciliationRow> {
  const after = since.toISOString()
  const [missing, delays] = await Promise.all([
    db.execute(sql`select count(*) filter (where missing_start_at >= ${after}::timestamptz) as start, count(*) filter
      (where missing_end_at >= ${after}::timestamptz) as "end" from task_live
      where service_code = ${serviceCode} and (missing_start_at >= ${after}::timestamptz or missing_end_at >=
        ${after}::timestamptz)`),
    db.execute(sql`select percentile_cont(array[0.5, 0.99]) within group (order by extract(epoch from (c.received_at -
      c.signed_at)) * 1000) as p
      from (select service_code, received_at, signed_at from callbacks order by xid desc, id desc limit
        ${DELAY_WINDOW}) c
      where c.service_code = ${serviceCode} and c.signed_at is not null and c.received_at >= ${after}::timestamptz`),
  ])
  const counts = resultRows<{ start: unknown; end: unknown }>(missing)[0]
  const p = resultRows<{ p: unknown }>(delays)[0]?.p
  const percentiles = Array.isArray(p)
    ? p.map(Number)
    : typeof p === 'string'
      ? p.replace(/[{}]/g, '').split(',').filter(Boolean).map(Number)
      : []
  return {
    missingStart: Number(counts?.start ?? 0),
    missingEnd: Number(counts?.end ?? 0),
    delayP50Ms: percentiles[0] ?? null,
    delayP99Ms: percentiles[1] ?? null,
  }
}
