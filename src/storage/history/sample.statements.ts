import { sql } from 'drizzle-orm'
import type { AnswerSamples, LiveTask } from '../../fold/answer.sample.js'
import type { CallbackFacts } from '../../fold/sample.rules.js'
import type { SampledHealth } from '../../fold/task.health.js'
import { type Db, resultRows } from '../database.client.js'
import { jsonLiteral } from '../tables/json.rows.js'

const MINUTE = 60_000
const HOUR = 3_600_000

interface LiveRow {
  task_id: string
  at: string | Date
  listed: boolean
  viewers: number
  peak_viewers: number
  input_bytes: string | number | null
  output_bytes: string | number | null
  still_samples: number
  health: string
  health_since: string | Date
  first_listed_at: string | Date
  left_at: string | Date | null
  start_checked: boolean
  end_checked: boolean
  missing_start_at: string | Date | null
  missing_end_at: string | Date | null
  has_start: boolean
  has_end: boolean
}

const ms = (value: string | Date) => new Date(value).getTime()
const msOrNull = (value: string | Date | null) => (value === null ? null : ms(value))
const numOrNull = (value: string | number | null) => (value === null ? null : Number(value))

/**
 * What the previous answers left of a service code (its listed tasks, and those with a
 * reconciliation check pending), with what the callbacks said of each. Read in the transaction
 * that writes the next answer, under the code's graph lock.
 */
export async function readLiveTasks(
  tx: Db,
  serviceCode: string,
): Promise<{ live: Map<string, LiveTask>; callbacks: Map<string, CallbackFacts> }> {
  const rows = resultRows<LiveRow>(
    await tx.execute(sql`
      select l.*, coalesce(jsonb_typeof(t.state -> 'start') = 'object', false) as has_start,
        coalesce(jsonb_typeof(t.state -> 'end') = 'object', false) as has_end
      from task_live l
      -- A task's state is read only while one of its checks waits on it: most answers read none.
      left join tasks t on t.service_code = l.service_code and t.task_id = l.task_id and (not l.start_checked or
        (l.left_at is not null and not l.end_checked))
      where l.service_code = ${serviceCode} and (l.listed or not l.start_checked or not l.end_checked)`),
  )
  const live = new Map<string, LiveTask>()
  const callbacks = new Map<string, CallbackFacts>()
  for (const row of rows) {
    live.set(row.task_id, {
      taskId: row.task_id,
      at: ms(row.at),
      listed: row.listed,
      viewers: row.viewers,
      peakViewers: row.peak_viewers,
      inputBytes: numOrNull(row.input_bytes),
      outputBytes: numOrNull(row.output_bytes),
      stillSamples: row.still_samples,
      health: row.health as SampledHealth,
      since: ms(row.health_since),
      firstListedAt: ms(row.first_listed_at),
      leftAt: msOrNull(row.left_at),
      startChecked: row.start_checked,
      endChecked: row.end_checked,
      missingStartAt: msOrNull(row.missing_start_at),
      missingEndAt: msOrNull(row.missing_end_at),
    })
    callbacks.set(row.task_id, { hasStart: row.has_start, hasEnd: row.has_end })
  }
  return { live, callbacks }
}

// An epoch-milliseconds JSON value as a timestamp (JSON null stays null).
const stamp = (value: string) => sql.raw(`to_timestamp((${value})::float8 / 1000)`)

/**
 * Writes everything one answer yields in ONE statement: the raw samples (into the partition of
 * their time, which must exist), the task and service code minute and hour rollups, and the
 * `task_live` rows. Never a statement per task.
 */
export async function writeSamples(tx: Db, samples: AnswerSamples): Promise<void> {
  const { serviceCode, service } = samples
  const at = new Date(service.at).toISOString()
  const minute = new Date(Math.floor(service.at / MINUTE) * MINUTE).toISOString()
  const hour = new Date(Math.floor(service.at / HOUR) * HOUR).toISOString()
  const tasks = samples.tasks.map((t) => ({
    task_id: t.taskId,
    viewers: t.viewers,
    input_bytes: t.inputBytes,
    output_bytes: t.outputBytes,
    input_rate: t.input?.rate ?? null,
    output_rate: t.output?.rate ?? null,
    ib: t.input?.bytes ?? 0,
    isec: t.input?.seconds ?? 0,
    ob: t.output?.bytes ?? 0,
    osec: t.output?.seconds ?? 0,
    outputs: t.outputs,
  }))
  // Times as epoch milliseconds: PostgreSQL turns numbers into timestamps faster than it parses text.
  const live = samples.live.map((l) => [
    l.taskId,
    l.at,
    l.listed,
    l.viewers,
    l.peakViewers,
    l.inputBytes,
    l.outputBytes,
    l.stillSamples,
    l.health,
    l.since,
    l.firstListedAt,
    l.leftAt,
    l.startChecked,
    l.endChecked,
    l.missingStartAt,
    l.missingEndAt,
  ])
  const head = jsonLiteral({ ...service, code: serviceCode, at, minute, hour })
  const taskBucket = (table: string, bucket: string) =>
    sql.raw(`insert into ${table} as m (service_code, task_id, at, samples, viewers_sum, viewers_max, input_bytes,
      input_seconds, output_bytes, output_seconds)
      select h.code, t.task_id, (h.${bucket})::timestamptz, 1, t.viewers, t.viewers, t.ib, t.isec, t.ob, t.osec from t,
        h
      on conflict (service_code, task_id, at) do update set samples = m.samples + 1, viewers_sum = m.viewers_sum +
        excluded.viewers_sum,
        viewers_max = greatest(m.viewers_max, excluded.viewers_max), input_bytes = m.input_bytes + excluded.input_bytes,
        input_seconds = m.input_seconds + excluded.input_seconds, output_bytes = m.output_bytes + excluded.output_bytes,
        output_seconds = m.output_seconds + excluded.output_seconds`)
  const serviceBucket = (table: string, bucket: string) =>
    sql.raw(`insert into ${table} as m (service_code, at, samples, live_tasks_sum, live_tasks_max, viewers_sum,
      viewers_max, input_bytes, input_seconds)
      select h.code, (h.${bucket})::timestamptz, 1, h."liveTasks", h."liveTasks", h.viewers, h.viewers, h."inputBytes",
        h.seconds from h
      on conflict (service_code, at) do update set samples = m.samples + 1, live_tasks_sum = m.live_tasks_sum +
        excluded.live_tasks_sum,
        live_tasks_max = greatest(m.live_tasks_max, excluded.live_tasks_max), viewers_sum = m.viewers_sum +
          excluded.viewers_sum,
        viewers_max = greatest(m.viewers_max, excluded.viewers_max), input_bytes = m.input_bytes + excluded.input_bytes,
        input_seconds = m.input_seconds + excluded.input_seconds`)
  await tx.execute(sql`
    with h as (select * from jsonb_to_record(${head}) as h(code text, at timestamptz, minute text, hour text,
      "liveTasks" int, viewers bigint, "inputBytes" bigint, seconds float8)),
    t as (select * from jsonb_to_recordset(${jsonLiteral(tasks)}) as t(task_id text, viewers int, input_bytes bigint,
      output_bytes bigint, input_rate float8, output_rate float8, ib bigint, isec float8, ob bigint, osec float8,
      outputs jsonb)),
    raw as (insert into task_samples (service_code, task_id, at, viewers, input_bytes, output_bytes, input_rate,
      output_rate, outputs)
      select h.code, t.task_id, h.at, t.viewers, t.input_bytes, t.output_bytes, t.input_rate, t.output_rate, t.outputs
        from t, h),
    tm as (${taskBucket('task_metrics_minute', 'minute')}),
    th as (${taskBucket('task_metrics_hour', 'hour')}),
    sm as (${serviceBucket('service_metrics_minute', 'minute')}),
    sh as (${serviceBucket('service_metrics_hour', 'hour')}),
    lv as (insert into task_live select h.code, r->>0, ${stamp('r->>1')}, (r->>2)::boolean, (r->>3)::int,
      (r->>4)::int, (r->>5)::bigint, (r->>6)::bigint, (r->>7)::int, r->>8,
        ${stamp('r->>9')}, ${stamp('r->>10')}, ${stamp('r->>11')}, (r->>12)::boolean, (r->>13)::boolean,
          ${stamp('r->>14')}, ${stamp('r->>15')}
      from h, jsonb_array_elements(${jsonLiteral(live)}) r
      on conflict (service_code, task_id) do update set at = excluded.at, listed = excluded.listed, viewers =
        excluded.viewers,
        peak_viewers = excluded.peak_viewers, input_bytes = excluded.input_bytes, output_bytes = excluded.output_bytes,
        still_samples = excluded.still_samples, health = excluded.health, health_since = excluded.health_since,
        first_listed_at = least(task_live.first_listed_at, excluded.first_listed_at), left_at = excluded.left_at,
        start_checked = task_live.start_checked or excluded.start_checked, end_checked = task_live.end_checked or
          excluded.end_checked,
        missing_start_at = coalesce(task_live.missing_start_at, excluded.missing_start_at), missing_end_at =
          coalesce(task_live.missing_end_at, excluded.missing_end_at))
    select 1`)
}
