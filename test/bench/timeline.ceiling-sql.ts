import type postgres from 'postgres'

/**
 * The timeline bench's independent ceiling: `Task.timeline(first:)` answered by one statement
 * that reads livegate's tables and builds the response JSON in PostgreSQL. It knows the stored
 * layout and the published shapes of the entries (docs/querying.md#a-tasks-timeline) and nothing
 * of livegate's code. Poll answers are folded by a recursive walk from one run's start to the
 * next (an index range each step, read once in all), never sample by sample, so the walk costs
 * a step per run. It covers what the bench's data holds: a task whose start and end are told by
 * derived events (livegate reads them from its state only when webhooks are off); the deep-equal
 * check before measuring says where it does not follow.
 */

type Sql = postgres.Sql
type Fragment = postgres.PendingQuery<postgres.Row[]>

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`
const base64url = (text: string) =>
  `rtrim(translate(encode(convert_to(${text}, 'UTF8'), 'base64'), E'+/\\n', '-_'), '=')`
const msOf = (at: string) => `floor(extract(epoch from ${at}) * 1000)::bigint`
const clock = (at: string) => `to_char(${at} at time zone 'UTC', 'HH24:MI:SS')`
const key = (letter: string, id: string, suffix = '') => `'${letter}' || lpad((${id})::text, 16, '0')${suffix}`
const plural = (n: string, word: string) => `(${n})::text || ' ${word}' || case when ${n} = 1 then '' else 's' end`
// A global id: its type and key parts as JSON.stringify writes an array of strings (no spaces).
const globalId = (type: string, ...parts: string[]) =>
  base64url(`'${type}:[' || ${parts.map((part) => `to_json((${part})::text)::text`).join(` || ',' || `)} || ']'`)
// A jsonb fact as text when it is a string, else '' (what the fold reads of an event's facts).
const said = (name: string) => `case when jsonb_typeof(facts->'${name}') = 'string' then facts->>'${name}' else '' end`

const KINDS: Array<[type: number, kind: string, typename: string]> = [
  [0, 'LIVE_START', 'LiveStartNotification'],
  [1, 'LIVE_END', 'LiveEndNotification'],
  [2, 'ARCHIVED', 'ArchivedNotification'],
  [8, 'CLIENT_DISCONNECT', 'ClientDisconnectNotification'],
  [9, 'THUMBNAIL', 'ThumbnailNotification'],
  [15, 'LIVE_RESUME', 'LiveResumeNotification'],
]
const kindOf = `case cb.type ${KINDS.map(([t, k]) => `when ${t} then '${k}'`).join(' ')} else 'UNKNOWN' end`
const typenameOf = `case cb.type ${KINDS.map(([t, , n]) => `when ${t} then '${n}'`).join(' ')}
  else 'UnknownNotification' end`

// Each part's entries as (at, key, kind, source, summary, subject typename, subject id).
const CALLBACKS = `select ${msOf('cb.received_at')}, ${key('c', 'cb.id')},
    case when cb.type = 15 then 'RECONNECT' when cb.type = 2 and cb.values->>'fileName' is not null then 'RECORDING'
      else 'CALLBACK' end,
    'PUSHED',
    case when cb.type = 15 then 'LIVE_RESUME: ' || case when cb.values->>'status' = '1'
        then 'its client reconnected: the live resumed' else 'waits for its client to reconnect' end
      when cb.type = 2 and cb.values->>'fileName' is not null then
        'ARCHIVED: the recording ' || (cb.values->>'fileName') ||
        ' is ready'
      else ${kindOf} || ' (type ' || cb.type || ')' end,
    case when cb.type = 2 and cb.values->>'fileName' is not null then (case when rc.id is not null then 'Recording' end)
      else ${typenameOf} end,
    case when cb.type = 2 and cb.values->>'fileName' is not null then
        (case when rc.id is not null then ${globalId('Recording', 'cb.service_code', "cb.values->>'fileName'")} end)
      else ${globalId('Notification', 'cb.id')} end
  from cb left join recordings rc on rc.service_code = cb.service_code and rc.file_name = cb.values->>'fileName'`

const EVENTS = `select ${msOf('occurred_at')}, ${key('e', 'id')},
    case type when 'task.started' then 'STATUS' when 'task.ended' then 'STATUS' when 'task.health_changed' then 'HEALTH'
      when 'task.callback_missing' then 'CALLBACK_MISSING' else 'RECORDING' end,
    case when type = 'task.started' then
        case when exists (select 1 from cb where cb.type = 0 and cb.received_at <= ev.occurred_at) then 'PUSHED'
          else 'POLLED' end
      when type = 'task.ended' and ${said('endReason')} <> 'VANISHED' then
        case when exists (select 1 from cb where cb.type = 1 and cb.received_at <= ev.occurred_at) then 'PUSHED'
          else 'POLLED' end
      else 'INFERRED' end,
    case type when 'task.started' then 'status LIVE: started'
      when 'task.ended' then 'status ENDED' || case when ${said('endReason')} <> '' then ' (' || ${said('endReason')} ||
        ')' else '' end
      when 'task.health_changed' then
        'health ' || ${said('from')} || ' → ' || ${said('to')} || ': ' || ${said('reason')}
      when 'task.callback_missing' then 'no ' || ${said('kind')} || ' callback: ' || ${said('reason')}
      else 'recording missing: ' || ${said('reason')} end,
    null, null
  from ev`

const INCIDENT_ID = globalId('Incident', 'i.id')
const INCIDENTS = `select e.at, ${key('i', 'i.id', ' || e.step')}, 'INCIDENT', e.source, e.summary, 'Incident',
    ${INCIDENT_ID}
  from incidents i cross join lateral (values
    (${msOf('i.opened_at')}, 'a', 'INFERRED',
      'incident opened (' || i.severity || ', ' || i.rule || '): ' || i.summary),
    (${msOf('i.acknowledged_at')}, 'b', 'DONE', 'incident acknowledged by ' || coalesce(i.acknowledged_by,
      'the local user')),
    (${msOf('i.resolved_at')}, 'c', 'INFERRED', 'incident resolved: ' || case i.resolution
      when 'cleared' then 'its condition cleared' when 'task-ended' then 'its task ended'
      when 'rule-removed' then 'its rule is gone' else coalesce(i.resolution, 'resolved') end)
  ) e(at, step, source, summary)
  where i.service_code = $1 and i.task_id = $2 and e.at is not null`

const WHAT = `case a.kind when 'STOP_TASK' then 'stop' when 'SEND_MESSAGE' then 'message' else a.kind end`
const ACTIONS = `select e.at, ${key('a', 'a.id', ' || e.step')}, 'ACTION', 'DONE', e.summary, 'Action',
    ${globalId('Action', 'a.id')}
  from actions a cross join lateral (values
    (${msOf('a.requested_at')}, 'a', ${WHAT} || ' asked by ' || coalesce(a.requested_by, 'the local user') ||
      case when a.state = 'REFUSED' then ', refused (' || coalesce(a.refusal, '') || ')' else '' end),
    (case when a.state <> 'REFUSED' then ${msOf('a.finished_at')} end, 'b', ${WHAT} || ' ' || a.state ||
      case when a.ret is null then '' else ': the cloud answered ret ' || a.ret ||
        coalesce(' (' || nullif(a.message, '') || ')', '') end)
  ) e(at, step, summary)
  where a.service_code = $1 and a.task_id = $2 and e.at is not null`

const LISTED_ONLY = `select ${msOf('first_seen_at')}, ${key('r', 'id')}, 'RECORDING', 'POLLED',
    'recording ' || file_name || ' listed by the archive', 'Recording',
    ${globalId('Recording', 'service_code', 'file_name')}
  from recordings where service_code = $1 and task_id = $2 and from_list and not from_callback`

const TRIES = `d.attempts || ' attempt' || case when d.attempts = 1 then '' else 's' end`
const CODE = `coalesce(', HTTP ' || d.last_status_code, '')`
const WHEN = `coalesce(' at ' || ${clock('coalesce(d.delivered_at, d.finished_at)')} || ' UTC', '')`
const DELIVERIES = `select ${msOf('d.created_at')}, ${key('w', 'd.id')}, 'WEBHOOK', 'DONE', d.event_type || ' ' ||
    case d.status when 'DELIVERED' then 'delivered to ' || d.endpoint || ${WHEN} || ' (' || ${TRIES} || ${CODE} || ')'
      when 'DEAD' then 'a dead letter for ' || d.endpoint || ${WHEN} || ' (' || ${TRIES} || ${CODE} || ')'
      else 'in line for ' || d.endpoint || ' (' || ${TRIES} || ' so far' || ${CODE} || ')' end,
    null, null
  from webhook_deliveries d
  where d.event_id in (select 'cb_' || id from cb union all select 'ev_' || id from ev)`

// The task list's answers: each run (from its first answer to the one before a gap of over a
// minute or a drop to half its high from 4 or more), each drop, and the peak.
const SAMPLES = 'task_samples where service_code = $1 and task_id = $2'
// One step per run: from a run's first answer, the first answer after it that starts another (the frame
// before each answer is the run so far: its count, low, high and last answer), read in `at` order and no further.
const WALK = `walk(k, s_at, prev_at, prev_last, n, lo, hi, dropped_to) as (
    (select 0, at, null::timestamptz, null::timestamptz, null::bigint, null::int, null::int, null::int
      from ${SAMPLES} order by at limit 1)
    union all
    select w.k + 1, b.at, w.s_at, b.last_at, b.n, b.lo, b.hi, case when b.gap then null else b.viewers end
    from walk w cross join lateral (
      select * from (
        select at, viewers, at > max(at) over p + interval '60 seconds' as gap, max(at) over p as last_at,
          count(*) over p as n, min(viewers) over p as lo, max(viewers) over p as hi
        from ${SAMPLES} and at >= w.s_at
        window p as (order by at rows between unbounded preceding and 1 preceding)
      ) z
      where at > w.s_at and (gap or (hi >= 4 and viewers * 2 <= hi))
      order by at limit 1
    ) b
  ), runs(k, first_at, last_at, n, lo, hi) as (
    select k - 1, prev_at, prev_last, n, lo, hi from walk where k > 0
    union all
    -- The last run ends with the last answer.
    select f.k, f.s_at, r.last, r.n, r.lo, r.hi
    from (select k, s_at from walk order by k desc limit 1) f
    cross join lateral (select max(at) as last, count(*) as n, min(viewers) as lo, max(viewers) as hi
      from ${SAMPLES} and at >= f.s_at) r
  ), peak as (
    -- The first answer with the most viewers: in the first run whose high is the highest.
    select s.at, s.viewers from (select * from runs where hi > 0 order by hi desc, k limit 1) top
    cross join lateral (select at, viewers from ${SAMPLES} and at between top.first_at and top.last_at
      and viewers = top.hi order by at limit 1) s
  )`
const RUNS = `select ${msOf('first_at')}, ${key('l', msOf('first_at'))}, 'LISTED', 'POLLED',
    case when k = 0 then 'first listed' else 'listed' end || ', ' || ${plural('n', 'answer')} || ', ' ||
      case when n = 1 then ${clock('first_at')} else ${clock('first_at')} || '–' || ${clock('last_at')} end || ', ' ||
      case when lo = hi then ${plural('lo', 'viewer')} else lo || '–' || hi || ' viewers' end || ' (UTC)',
    null, null
  from runs
  union all
  select ${msOf('s_at')}, ${key('d', msOf('s_at'))}, 'AUDIENCE', 'POLLED',
    'audience dropped from ' || hi || ' to ' || ${plural('dropped_to', 'viewer')}, null, null
    from walk where dropped_to is not null
  union all
  select ${msOf('at')}, ${key('p', msOf('at'))}, 'AUDIENCE', 'POLLED',
    'audience peak: ' || ${plural('viewers', 'viewer')},
    null, null
    from peak`

/** `Task.timeline(first:)` of one task (service code, `hashed_id`), the response's text as its one value. */
export function timelineStatement(sql: Sql, serviceCode: string, taskId: string, first: number): Fragment {
  const statement = `
    with recursive cb as (
      select id, type, service_code, received_at, values from callbacks where task_id = $2 and service_code = $1
    ), ev as (
      select id, type, occurred_at, facts from webhook_events where task_id = $2 and service_code = $1
        and type in ('task.started', 'task.ended', 'task.health_changed', 'task.callback_missing', 'recording.missing')
    ), ${WALK},
    entries(at, key, kind, source, summary, typename, subject) as (
      ${CALLBACKS} union all ${EVENTS} union all ${INCIDENTS} union all ${ACTIONS} union all ${LISTED_ONLY}
      union all ${DELIVERIES} union all ${RUNS}
    ), page as (
      select *, row_number() over (order by at, key collate "C") as n from entries
      order by at, key collate "C" limit $3 + 1
    ), shown as (
      select ${base64url(`'tl1:' || at || ':' || key`)} as cursor, * from page where n <= $3
    )
    select json_build_object('data', json_build_object('task', case when exists (select 1 from tasks
      where service_code = $1 and task_id = $2) then json_build_object('timeline', json_build_object(
        'pageInfo', json_build_object('hasNextPage', (select count(*) from page) > $3,
          'endCursor', (select cursor from shown order by n desc limit 1)),
        'edges', (select coalesce(json_agg(json_build_object('cursor', cursor, 'node', json_build_object(
            'at', to_char(timestamp 'epoch' + at * interval '1 millisecond', ${ISO}), 'kind', kind, 'source', source,
            'summary', summary, 'subject', case when subject is not null then json_build_object('__typename', typename,
              'id', subject) end)) order by n), '[]'::json) from shown)
      )) end))::text as body`
  return sql.unsafe(statement, [serviceCode, taskId, first], { prepare: true })
}
