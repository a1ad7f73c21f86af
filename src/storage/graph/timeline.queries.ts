import { sql } from 'drizzle-orm'
import type { TaskState } from '../../fold/task.fold.js'
import type { TimelineRecord } from '../../fold/timeline/timeline.fold.js'
import type { TimelineSample } from '../../fold/timeline/timeline.samples.js'
import { type Db, resultRows } from '../database.client.js'

/**
 * What a task's timeline is made of, read where livegate already keeps it (no copy of its own):
 * the log's callbacks, the events livegate derived, incidents, actions, recordings and the webhook
 * deliveries of those callbacks and events, in one statement, each part a JSON array of compact
 * tuples by the index that leads with the task. The samples of the task list's answers (17,000 a
 * day) are not read whole: the statement gives their peak by its index, and `timelineSamples`
 * reads them in time order a chunk at a time, as far as a page reaches.
 */

// Epoch milliseconds of a timestamp, as a JSON number: whole, as a JavaScript time and a cursor hold it.
const ms = (column: string) => sql.raw(`floor(extract(epoch from ${column}) * 1000)::float8`)

/** The derived events that tell of a task on its line (the rest are told from their own tables). */
const EVENT_TYPES = ['task.started', 'task.ended', 'task.health_changed', 'task.callback_missing', 'recording.missing']

type Tuple = Array<string | number | boolean | null | undefined>

/** Every fact of one task (its service code and `hashed_id`) that its timeline shows but its samples, and their peak. */
export async function timelineFacts(
  db: Db,
  serviceCode: string,
  taskId: string,
): Promise<TimelineRecord & { peak: TimelineSample | null }> {
  const [row] = resultRows<Record<string, string | null>>(
    await db.execute(sql`
      with cb as (
        select id, type, received_at, values from callbacks where task_id = ${taskId} and service_code = ${serviceCode}
      ), ev as (
        select id, type, occurred_at, facts from webhook_events
        where task_id = ${taskId} and service_code = ${serviceCode}
          and type in (${sql.join(
            EVENT_TYPES.map((type) => sql`${type}`),
            sql`, `,
          )})
      )
      select
        (select state::text from tasks where service_code = ${serviceCode} and task_id = ${taskId}) as task,
        (select coalesce(json_agg(json_build_array(id, type, ${ms('received_at')}, values->>'status',
          values->>'fileName')), '[]') from cb)::text as callbacks,
        -- The first answer with the most viewers, by task_samples_task_peak_idx: its most, then its first with
        -- them (one step down each hour's index, where "order by viewers desc, at" sorts the day).
        (select json_build_array(${ms('at')}, viewers) from task_samples
          where service_code = ${serviceCode} and task_id = ${taskId} and viewers = (select max(viewers)
            from task_samples where service_code = ${serviceCode} and task_id = ${taskId})
          order by at limit 1)::text as peak,
        (select coalesce(json_agg(json_build_array(id, type, ${ms('occurred_at')}, facts)), '[]') from ev)::text as events,
        (select coalesce(json_agg(json_build_array(id, rule, severity, summary, ${ms('opened_at')},
          ${ms('acknowledged_at')}, acknowledged_by, ${ms('resolved_at')}, resolution)), '[]') from incidents
          where service_code = ${serviceCode} and task_id = ${taskId})::text as incidents,
        (select coalesce(json_agg(json_build_array(id, kind, state, ${ms('requested_at')}, ${ms('finished_at')},
          requested_by, refusal, ret, message)), '[]') from actions
          where service_code = ${serviceCode} and task_id = ${taskId})::text as actions,
        (select coalesce(json_agg(json_build_array(id, file_name, from_callback, from_list, ${ms('first_seen_at')})), '[]')
          from recordings where service_code = ${serviceCode} and task_id = ${taskId})::text as recordings,
        (select coalesce(json_agg(json_build_array(d.id, d.endpoint, d.event_type, d.status, d.attempts,
          d.last_status_code, ${ms('d.created_at')}, ${ms('coalesce(d.delivered_at, d.finished_at)')})), '[]')
          from webhook_deliveries d
          where d.event_id in (select 'cb_' || id from cb union all select 'ev_' || id from ev))::text as deliveries
    `),
  )
  const part = (name: string): Tuple[] => JSON.parse(row?.[name] ?? '[]') as Tuple[]
  const num = (value: Tuple[number]) => Number(value)
  const numOrNull = (value: Tuple[number]) => (value === null || value === undefined ? null : Number(value))
  const text = (value: Tuple[number]) => String(value)
  const textOrNull = (value: Tuple[number]) => (value === null || value === undefined ? null : String(value))
  const peak = row?.peak ? (JSON.parse(row.peak) as [number, number]) : undefined
  return {
    serviceCode,
    peak: peak ? { at: num(peak[0]), viewers: num(peak[1]) } : null,
    task: row?.task ? (JSON.parse(row.task) as TaskState) : null,
    callbacks: part('callbacks').map(([id, type, at, status, fileName]) => ({
      id: num(id),
      type: num(type),
      at: num(at),
      status: numOrNull(status),
      fileName: textOrNull(fileName),
    })),
    events: part('events').map(([id, type, at, facts]) => ({
      id: num(id),
      type: text(type),
      at: num(at),
      facts: (facts ?? {}) as unknown as Record<string, unknown>,
    })),
    incidents: part('incidents').map(
      ([id, rule, severity, summary, openedAt, ackAt, ackBy, resolvedAt, resolution]) => ({
        id: num(id),
        rule: text(rule),
        severity: text(severity),
        summary: text(summary),
        openedAt: num(openedAt),
        acknowledgedAt: numOrNull(ackAt),
        acknowledgedBy: textOrNull(ackBy),
        resolvedAt: numOrNull(resolvedAt),
        resolution: textOrNull(resolution),
      }),
    ),
    actions: part('actions').map(([id, kind, state, requestedAt, finishedAt, by, refusal, ret, message]) => ({
      id: num(id),
      kind: text(kind),
      state: text(state),
      requestedAt: num(requestedAt),
      finishedAt: numOrNull(finishedAt),
      requestedBy: textOrNull(by),
      refusal: textOrNull(refusal),
      ret: numOrNull(ret),
      message: textOrNull(message),
    })),
    recordings: part('recordings').map(([id, fileName, fromCallback, fromList, firstSeenAt]) => ({
      id: num(id),
      fileName: text(fileName),
      fromCallback: fromCallback === true,
      fromList: fromList === true,
      firstSeenAt: num(firstSeenAt),
    })),
    deliveries: part('deliveries').map(([id, endpoint, eventType, status, attempts, code, at, finishedAt]) => ({
      id: num(id),
      endpoint: text(endpoint),
      eventType: text(eventType),
      status: text(status),
      attempts: num(attempts),
      lastStatusCode: numOrNull(code),
      at: num(at),
      finishedAt: numOrNull(finishedAt),
    })),
  }
}

/**
 * Up to `limit` of a task's samples from `from` (epoch ms, inclusive) on, in time order, by the index
 * that leads with the task: a page of its timeline reads them only as far as it reaches.
 */
export async function timelineSamples(
  db: Db,
  serviceCode: string,
  taskId: string,
  from: number | undefined,
  limit: number,
): Promise<TimelineSample[]> {
  const since = from === undefined ? sql`` : sql`and at >= ${new Date(from).toISOString()}::timestamptz`
  const [row] = resultRows<{ samples: string | null }>(
    await db.execute(sql`
      select coalesce(json_agg(json_build_array(${ms('at')}, viewers) order by at), '[]')::text as samples
      from (select at, viewers from task_samples where service_code = ${serviceCode} and task_id = ${taskId} ${since}
        order by at limit ${limit}) s`),
  )
  const pairs = JSON.parse(row?.samples ?? '[]') as Array<[number, number]>
  return pairs.map(([at, viewers]) => ({ at: Number(at), viewers: Number(viewers) }))
}
