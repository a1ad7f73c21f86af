import { sql } from 'drizzle-orm'
import type { Db } from '../../src/storage/database.client.js'
import { createSamplePartitions, PARTITION_MS } from '../../src/storage/history/sample.partitions.js'
import { rows, SEED_SERVICE_CODE } from './query.seed.js'

/**
 * A task's history as the issue's target states it, written straight into livegate's tables
 * (set-based inserts: 17k samples one statement, not 17k sampler folds): a task list answer every
 * 5 s over the span, with a listing gap every two hours and an audience drop every half hour, one
 * peak; 40 callbacks (the task's own, told again over its life), the derived events of its start,
 * end, health and a missing callback, 5 incidents, 3 actions, 2 recordings and 100 webhook
 * deliveries of those callbacks and events. The task itself comes from `seedTasks` (a real fold).
 */

/** What one seeded history holds, as the report states it. */
export interface HistoryShape {
  taskId: string
  spanMs: number
  samples: number
  callbacks: number
  events: number
  incidents: number
  actions: number
  recordings: number
  deliveries: number
}

export const SAMPLE_EVERY_MS = 5_000
const CALLBACKS = 40
const DELIVERIES = 100

const iso = (ms: number) => new Date(ms).toISOString()

/** The samples of one task over `[t0, t0 + spanMs)`: one statement, after the hourly partitions exist. */
async function seedSamples(db: Db, taskId: string, t0: number, spanMs: number): Promise<void> {
  for (let at = t0; at < t0 + spanMs; at += PARTITION_MS) await createSamplePartitions(db, at)
  const count = spanMs / SAMPLE_EVERY_MS
  // Viewers 20–32; a drop to 5 at every 360th answer (half an hour); the peak, 80, a third of the way in;
  // no answer for 150 s from the 600th answer of every two hours (the task left the list a while).
  await db.execute(sql`
    insert into task_samples (service_code, task_id, at, viewers, outputs)
    select ${SEED_SERVICE_CODE}, ${taskId}, ${iso(t0)}::timestamptz + i * interval '5 seconds',
      case when i = ${Math.floor(count / 3)} then 80 when i % 360 = 180 then 5 else 20 + (i * 7) % 13 end, '[]'::jsonb
    from generate_series(0, ${count - 1}::int) i
    where i % 1440 not between 600 and 629`)
}

/** The task's callbacks made 40 (its own told again) and spread evenly over the span; one of its recordings dropped. */
async function seedCallbacks(db: Db, taskId: string, t0: number, spanMs: number): Promise<void> {
  // Two recordings, as the issue's task has: the third output's ARCHIVED and its catalogue row go.
  await db.execute(sql`delete from recordings where service_code = ${SEED_SERVICE_CODE} and task_id = ${taskId}
    and file_name like '%rtmp_sd.mp4'`)
  await db.execute(sql`delete from callbacks where task_id = ${taskId} and type = 2
    and values->>'fileName' like '%rtmp_sd.mp4'`)
  const [have] = await rows<{ n: string }>(db, sql`select count(*) as n from callbacks where task_id = ${taskId}`)
  const missing = CALLBACKS - Number(have?.n ?? 0)
  // Told again: the starts, thumbnails and ends (an ARCHIVED told twice would name its file twice).
  await db.execute(sql`
    insert into callbacks (dedupe_key, type, service_code, task_id, user_name, vs_id, service_created_at, received_at,
      last_delivered_at, deliveries, values, signed_at, method, path, query, body, headers, remote_address, signature,
      signature_error)
    select 'again:' || g || ':' || c.id, c.type, c.service_code, c.task_id, c.user_name, c.vs_id, c.service_created_at,
      c.received_at, c.last_delivered_at, 1, c.values, c.signed_at, c.method, c.path, c.query, c.body, c.headers,
      c.remote_address, c.signature, c.signature_error
    from generate_series(1, ${missing}::int) g
    cross join lateral (select * from callbacks r where r.task_id = ${taskId} and r.type <> 2 order by r.id
      offset (g - 1) % (select count(*) from callbacks where task_id = ${taskId} and type <> 2) limit 1) c`)
  await db.execute(sql`
    update callbacks c set received_at = o.at, last_delivered_at = o.at
    from (select id, ${iso(t0)}::timestamptz + (row_number() over (order by id) - 0.5) * ${spanMs / CALLBACKS}::float8
      * interval '1 millisecond' as at from callbacks where task_id = ${taskId}) o
    where c.id = o.id`)
}

/** The derived events, incidents and actions of the task, at fixed places over its span. */
async function seedDerived(db: Db, taskId: string, t0: number, spanMs: number): Promise<void> {
  const at = (fraction: number) => iso(t0 + Math.round(fraction * spanMs))
  const events: Array<[string, number, Record<string, unknown>]> = [
    ['task.started', 0, {}],
    ['task.health_changed', 0.2, { from: 'HEALTHY', to: 'STARVING', reason: 'its input bytes did not grow' }],
    ['task.health_changed', 0.21, { from: 'STARVING', to: 'HEALTHY', reason: 'its input bytes grow again' }],
    ['task.callback_missing', 0.4, { kind: 'LIVE_START', reason: 'listed live with no type 0 within the grace' }],
    ['task.health_changed', 0.6, { from: 'HEALTHY', to: 'STARVING', reason: 'its input bytes did not grow' }],
    ['task.health_changed', 0.62, { from: 'STARVING', to: 'HEALTHY', reason: 'its input bytes grow again' }],
    ['task.ended', 1, { endReason: 'USER_STOPPED' }],
  ]
  for (const [type, fraction, facts] of events)
    await db.execute(sql`insert into webhook_events (type, service_code, task_id, occurred_at, facts)
      values (${type}, ${SEED_SERVICE_CODE}, ${taskId}, ${at(fraction)}, ${JSON.stringify(facts)}::jsonb)`)
  for (let j = 0; j < 5; j++) {
    const opened = t0 + Math.round(((j + 0.3) / 5) * spanMs)
    const acknowledged = j % 2 === 0 ? iso(opened + 60_000) : null
    const resolved = j < 4 ? iso(opened + 300_000) : null
    await db.execute(sql`insert into incidents (rule, severity, state, service_code, task_id, signal, summary,
        started_at, opened_at, acknowledged_at, acknowledged_by, resolved_at, resolution)
      values (${`rule-${j}`}, ${j === 2 ? 'CRITICAL' : 'WARNING'}, ${resolved ? 'RESOLVED' : 'OPEN'},
        ${SEED_SERVICE_CODE}, ${taskId}, 'task.health', ${`input stalled (${j})`}, ${iso(opened - 20_000)},
        ${iso(opened)}, ${acknowledged}, ${acknowledged && j === 0 ? 'ops' : null}, ${resolved},
        ${resolved ? (j === 3 ? 'task-ended' : 'cleared') : null})`)
  }
  const actions: Array<[string, string, number, number | null, string | null, string | null]> = [
    ['SEND_MESSAGE', 'SUCCEEDED', 0.3, 0, null, null],
    ['SEND_MESSAGE', 'REFUSED', 0.5, null, null, 'RATE_LIMITED'],
    ['STOP_TASK', 'FAILED', 0.99, 5, 'no such task', null],
  ]
  for (const [kind, state, fraction, ret, message, refusal] of actions)
    await db.execute(sql`insert into actions (kind, service_code, task_id, text, requested_by, args_hash, key_scope,
        state, refusal, ret, message, attempts, requested_at, finished_at)
      values (${kind}, ${SEED_SERVICE_CODE}, ${taskId}, ${kind === 'SEND_MESSAGE' ? 'hello' : null}, 'ops', 'h', 'ops',
        ${state}, ${refusal}, ${ret}, ${message}, ${refusal ? 0 : 1}, ${at(fraction)},
        ${refusal ? null : iso(t0 + Math.round(fraction * spanMs) + 1_500)})`)
}

/** 100 deliveries of the task's callbacks and events, to as many endpoints as it takes; 1 in 10 dead, 1 retrying. */
async function seedDeliveries(db: Db, taskId: string): Promise<void> {
  await db.execute(sql`
    with told as (
      select 'cb_' || id as event_id, 'notification.' || type as event_type, received_at as at, row_number() over
        (order by id) as n from callbacks where task_id = ${taskId}
      union all
      select 'ev_' || id, type, occurred_at, 1000 + row_number() over (order by id) from webhook_events
        where task_id = ${taskId}
    ), numbered as (select *, row_number() over (order by n) - 1 as k, count(*) over () as total from told)
    insert into webhook_deliveries (endpoint, event_id, event_type, service_code, body, status, attempts,
      next_attempt_at, last_status_code, created_at, delivered_at, finished_at)
    select 'hook-' || (i / e.total), e.event_id, e.event_type, ${SEED_SERVICE_CODE}, '{}',
      case i % 10 when 9 then 'DEAD' when 8 then 'RETRYING' else 'DELIVERED' end, 1 + (i % 10 / 8) * 4,
      e.at + interval '1 second', case i % 10 when 9 then 500 when 8 then 503 else 200 end, e.at + interval '1 second',
      case when i % 10 < 8 then e.at + interval '2 seconds' end,
      case when i % 10 < 8 then e.at + interval '2 seconds' when i % 10 = 9 then e.at + interval '90 seconds' end
    from generate_series(0, ${DELIVERIES - 1}::int) i join numbered e on e.k = i % e.total`)
}

/** Writes a task's history over `[t0, t0 + spanMs)`; the task must exist (`seedTasks`). */
export async function seedHistory(db: Db, taskId: string, t0: number, spanMs: number): Promise<HistoryShape> {
  await seedSamples(db, taskId, t0, spanMs)
  await seedCallbacks(db, taskId, t0, spanMs)
  await seedDerived(db, taskId, t0, spanMs)
  await seedDeliveries(db, taskId)
  const count = async (table: string, where = sql`task_id = ${taskId}`) => {
    const [row] = await rows<{ n: string }>(db, sql`select count(*) as n from ${sql.raw(table)} where ${where}`)
    return Number(row?.n ?? 0)
  }
  return {
    taskId,
    spanMs,
    samples: await count('task_samples'),
    callbacks: await count('callbacks'),
    events: await count('webhook_events'),
    incidents: await count('incidents'),
    actions: await count('actions'),
    recordings: await count('recordings'),
    deliveries: await count(
      'webhook_deliveries',
      sql`event_id in (select 'cb_' || id from callbacks where task_id = ${taskId}
        union all select 'ev_' || id from webhook_events where task_id = ${taskId})`,
    ),
  }
}
