import type postgres from 'postgres'

/**
 * The independent ceiling's SQL: each operation the query bench sends, answered by one statement
 * that reads the tables and builds the whole response JSON in PostgreSQL. It knows the stored
 * layout (the `tasks` row and its `state` jsonb, the `callbacks` row, its place in the log and
 * its parsed `values`) and the published schema's shapes, and nothing of livegate's code: a
 * schema rename is an edit here. It covers what the bench's data holds; where livegate reads a
 * corner the data never reaches (a listed task's percent-encoded `opaque` without a live start),
 * it does not follow, and the deep-equal check before measuring says so.
 */

type Sql = postgres.Sql
type Fragment = postgres.PendingQuery<postgres.Row[]>

/** The task page's variables, its cursor already decoded. */
export interface TaskPageArgs {
  first: number
  after?: { sortAtMs: number; id: number } | undefined
  status?: readonly string[] | undefined
}

// A time as GraphQL's DateTime writes it: RFC 3339 at UTC with milliseconds.
const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`
const isoOfMs = (ms: string) => `to_char(timestamp 'epoch' + (${ms})::bigint * interval '1 millisecond', ${ISO})`
const isoOf = (at: string) => `to_char(${at} at time zone 'UTC', ${ISO})`
// PostgreSQL's base64 breaks lines every 76 characters; base64url has none.
const base64url = (text: string) =>
  `rtrim(translate(encode(convert_to(${text}, 'UTF8'), 'base64'), E'+/\\n', '-_'), '=')`
// A jsonb value, with JSON null read as absent (what `??` does in the fold's reader).
const nn = (value: string) => `nullif(${value}, 'null'::jsonb)`
// GraphQL's Int is 32 bits: a stored number beyond it reads as null.
const int32 = (value: string) =>
  `case when jsonb_typeof(${value}) = 'number' and (${value})::numeric between -2147483648 and 2147483647 then ${value}` +
  ` end`
const stampOf = (register: string) =>
  `((${register}#>>'{stamp,at}')::bigint, (${register}#>>'{stamp,key}') collate "C")`
// MediaContainer: the documented containers by name (any case), every other one OTHER.
const containerOf = (text: string) =>
  `case when upper(${text}) in ('FLV', 'RTMP', 'M3U8', 'MP4') then upper(${text}) else 'OTHER' end`
const formatOf = (format: string) =>
  `case when ${nn(format)} is not null then json_build_object('container', ${containerOf(`${format}->>'container'`)}, 'videoCodec', ${format}->'videoCodec', 'audioCodec', ${format}->'audioCodec') end`

// Only callbacks whose place in the log is final: every older transaction has ended.
const FINAL = 'xid < pg_snapshot_xmin(pg_current_snapshot())'

// One notification, its kind's fields read from the values parsed at ingest (`v`, `callbacks.values`).
const COMMON = `'id', ${base64url(`'Notification:["' || c.id || ` + `'"]'`)}, 'kind', KIND, 'type', c.type, 'taskId', c.task_id, 'userName', c.user_name,
    'receivedAt', ${isoOf('c.received_at')}, 'deliveries', c.deliveries, 'signatureVerified', c.signature = 'verified'`
const KIND_FIELDS: Array<[type: number, typename: string, kind: string, fields: string]> = [
  [
    0,
    'LiveStartNotification',
    'LIVE_START',
    `'playUrl', v->'url', 'tag', v->'tag', 'createdAt', ${isoOf('c.service_created_at')}, 'format', ${formatOf(`v->'format'`)}`,
  ],
  [
    1,
    'LiveEndNotification',
    'LIVE_END',
    `'reachEnd', v->'reachEnd', 'outputIndex', ${int32(`v->'outputIdx'`)}, 'inputBytes', v->'inputBytes'`,
  ],
  [2, 'ArchivedNotification', 'ARCHIVED', `'playUrl', v->'url', 'fileName', v->'fileName', 'duration', v->'duration'`],
  [8, 'ClientDisconnectNotification', 'CLIENT_DISCONNECT', ''],
  [
    9,
    'ThumbnailNotification',
    'THUMBNAIL',
    `'imageUrl', v->'url', 'width', ${int32(`v->'width'`)}, 'height', ${int32(`v->'height'`)}`,
  ],
  [
    15,
    'LiveResumeNotification',
    'LIVE_RESUME',
    `'status', case v->>'status' when '0' then 'WAITING' when '1' then 'RESUMED' end`,
  ],
]
const NOTIFICATION = `case c.type ${KIND_FIELDS.map(
  ([type, typename, kind, fields]) =>
    `when ${type} then json_build_object('__typename', '${typename}', ${COMMON.replace('KIND', `'${kind}'`)}${fields ? `, ${fields}` : ''})`,
).join('\n    ')}
    else json_build_object('__typename', 'UnknownNotification', ${COMMON.replace('KIND', `'UNKNOWN'`)}) end`

// A task's global id: of its service code and hashed_id, as a JSON array.
const TASK_ID = base64url(`'Task:[' || to_json(t.service_code)::text || ',' || to_json(t.task_id)::text || ']'`)
const TASK_CURSOR = base64url(`'t1:' || (extract(epoch from t.sort_at) * 1000)::bigint || ':' || t.id`)

// Everything a task of the page shows, from its row (`t`) and its state (`s`, the listed task `lt`, `st`, `en`).
const TASK_NODE = `json_build_object(
    'id', ${TASK_ID}, 'taskId', t.task_id,
    'serviceCode', t.service_code, 'vsId', coalesce(s#>>'{vsId,value}', lt->>'vs_id'), 'userName', t.author,
    'status', t.status, 'endReason', t.end_reason, 'isResume', coalesce(st->'isResume', 'null'),
    'liveOnly', coalesce(${nn(`st->'liveOnly'`)}, en->'liveOnly', 'null'),
    'opaque', coalesce(${nn(`st->'opaque'`)}, lt->'opaque', 'null'),
    'startedAt', ${isoOfMs(`coalesce(s->>'firstCreatedAt', s#>>'{sighting,firstSeenAt}', s->>'firstEventAt')`)},
    'endedAt', case when t.end_reason in ('USER_STOPPED', 'ABNORMAL') then ${isoOfMs(`s#>>'{end,stamp,at}'`)}
      when t.end_reason = 'VANISHED' then ${isoOfMs(`s#>>'{sighting,lastSeenAt}'`)} end,
    'listed', t.listed, 'httpLiveUrl', lt->>'http_live_url',
    'inputBytes', greatest((lt->>'input_bytes')::bigint, (en->>'inputBytes')::bigint),
    'outputs', (${outputs()}),
    'recordings', (select coalesce(json_agg(json_build_object('outputIndex', r->'value'->'outputIdx', 'tag', r->'value'->'tag', 'playUrl', r->'value'->'url',
        'fileName', r->'value'->'fileName', 'duration', r->'value'->'duration', 'width', coalesce(r#>'{value,size,width}', 'null'),
        'height', coalesce(r#>'{value,size,height}', 'null'), 'inputBytes', r->'value'->'inputBytes',
        'createdAt', ${isoOfMs(`r#>>'{value,createdAt}'`)}, 'receivedAt', ${isoOfMs(`r#>>'{value,receivedAt}'`)},
        'format', case when ${nn(`r#>'{value,format}'`)} is not null then json_build_object('container', ${containerOf(`r#>>'{value,format,container}'`)}) end)
      order by ${stampOf('r')}), '[]'::json) from jsonb_array_elements(s->'recordings') r),
    'thumbnails', (select coalesce(json_agg(json_build_object('imageUrl', h->'value'->'url', 'width', h->'value'->'width', 'height', h->'value'->'height',
        'receivedAt', ${isoOfMs(`h#>>'{value,receivedAt}'`)}) order by ${stampOf('h')} desc), '[]'::json) from jsonb_array_elements(s->'thumbnails') h),
    'notifications', json_build_object('edges', (select coalesce(json_agg(json_build_object('cursor', ${base64url(`'n2:' || c.xid || ':' || c.id`)}, 'node', ${NOTIFICATION})
      order by c.xid desc, c.id desc), '[]'::json) from (select xid, id, type, task_id, user_name, service_created_at, received_at, deliveries, signature, values as v
        from callbacks where task_id = t.task_id and ${FINAL} order by xid desc, id desc limit 5) c))
  )`

// Outputs: the task list's and the notifications' joined on tag and container, by index then key.
function outputs(): string {
  const listedOutputs = `coalesce(lt->'outputs', '[]'::jsonb)`
  const keyOf = (o: string) => `coalesce(${o}->>'tag', '') || '|' || coalesce(${o}->>'format', '')`
  return `select coalesce(json_agg(json_build_object(
      'index', d.idx, 'tag', d.tag, 'playUrl', coalesce(o.st#>>'{value,url}', l.o->>'live_url'), 'timeShiftUrl', o.st#>>'{value,svodUrl}',
      'fileName', l.o->'file_name', 'width', coalesce(${nn(`l.o->'width'`)}, o.st#>'{value,size,width}', 'null'),
      'height', coalesce(${nn(`l.o->'height'`)}, o.st#>'{value,size,height}', 'null'),
      'httpOutputBytes', greatest((l.o->>'http_output_bytes')::bigint, (o.en#>>'{value,httpOutputBytes}')::bigint),
      'connections', l.o->'http_connections_num', 'startedAt', ${isoOfMs(`o.st#>>'{value,receivedAt}'`)},
      'endedAt', case when o.en is not null and (o.st is null or ${stampOf('o.en')} >= ${stampOf('o.st')}) then ${isoOfMs(`o.en#>>'{value,receivedAt}'`)} end,
      'format', case when coalesce(l.o->>'format', '') <> '' then json_build_object('container', ${containerOf(`l.o->>'format'`)},
          'videoCodec', coalesce(l.o->'video_codec_name', 'null'), 'audioCodec', coalesce(l.o->'audio_codec_name', 'null'))
        else ${formatOf(`coalesce(${nn(`o.st#>'{value,format}'`)}, o.en#>'{value,format}')`)} end,
      'streams', (select coalesce(json_agg(json_build_object('index', x->'index', 'kind', case x->>'codec_type' when '0' then 'VIDEO' when '1' then 'AUDIO' else 'UNKNOWN' end,
          'codecId', x->'codec_id', 'width', case when x->>'codec_type' = '1' then null else x->'width' end,
          'height', case when x->>'codec_type' = '1' then null else x->'height' end,
          'copyMode', case x->>'copy' when '1' then 'COPY' when '0' then 'TRANSCODE' when '2' then 'TRANSCODE' end, 'bitRate', x->'bit_rate') order by n), '[]'::json)
        from jsonb_array_elements(coalesce(l.o->'streams', '[]'::jsonb)) with ordinality as sx(x, n)),
      'recordings', (select coalesce(json_agg(json_build_object('outputIndex', r->'value'->'outputIdx', 'playUrl', r->'value'->'url',
          'fileName', r->'value'->'fileName', 'duration', r->'value'->'duration', 'receivedAt', ${isoOfMs(`r#>>'{value,receivedAt}'`)}) order by ${stampOf('r')}), '[]'::json)
        from jsonb_array_elements(s->'recordings') r
        where (d.idx is not null and (r#>>'{value,outputIdx}')::int = d.idx) or (${nn(`r#>'{value,outputIdx}'`)} is null and d.tag is not null and r#>>'{value,tag}' = d.tag))
    ) order by d.idx nulls last, k.key collate "C"), '[]'::json)
    from (select jsonb_object_keys(coalesce(s->'outputs', '{}')) as key union select ${keyOf('lo')} from jsonb_array_elements(${listedOutputs}) lo) k
    left join lateral (select lo as o, n - 1 as pos from jsonb_array_elements(${listedOutputs}) with ordinality as lx(lo, n)
      where ${keyOf('lo')} = k.key order by n desc limit 1) l on true
    cross join lateral (select ${nn(`s->'outputs'->k.key->'start'`)} as st, ${nn(`s->'outputs'->k.key->'end'`)} as en) o
    cross join lateral (select coalesce((o.en#>>'{value,outputIdx}')::int, l.pos::int) as idx,
      coalesce(l.o->>'tag', o.st#>>'{value,tag}', o.en#>>'{value,tag}') as tag) d`
}

/** The task page (`TASK_PAGE_QUERY`): one statement, the response's text as its one value. */
export function taskPageStatement(sql: Sql, args: TaskPageArgs): Fragment {
  const status =
    args.status && args.status.length > 0 ? sql`and t.status = any(${args.status as string[]}::text[])` : sql``
  const statusAll =
    args.status && args.status.length > 0 ? sql`where status = any(${args.status as string[]}::text[])` : sql``
  const after = args.after
    ? sql`and (t.sort_at, t.id) < (${new Date(args.after.sortAtMs).toISOString()}::timestamptz,
      ${args.after.id}::bigint)`
    : sql``
  return sql`
    with page as materialized (
      -- The state read out of its TOAST once (a fresh value is kept whole), not once per path into it.
      select t.id, t.task_id, t.service_code, t.status, t.end_reason, t.author, t.listed, t.sort_at, t.state ||
        '{}'::jsonb as state
      from tasks t where true ${status} ${after} order by t.sort_at desc, t.id desc limit ${args.first + 1}
    ), shown as (
      select ${sql.unsafe(TASK_CURSOR)} as cursor, ${sql.unsafe(TASK_NODE)} as node, t.n
      from (select *, row_number() over (order by sort_at desc, id desc) as n from page) t
      cross join lateral (select t.state as s) s0(s)
      cross join lateral (select s#>'{sighting,task,value}' as lt, s#>'{start,value}' as st, s#>'{end,value}' as en) v
      where t.n <= ${args.first}
    )
    select json_build_object('data', json_build_object('tasks', json_build_object(
      'totalCount', (select count(*) from tasks ${statusAll}),
      'pageInfo', json_build_object('hasNextPage', (select count(*) from page) > ${args.first}, 'endCursor', (select
        cursor from shown order by n desc limit 1)),
      'edges', (select coalesce(json_agg(json_build_object('cursor', cursor, 'node', node) order by n), '[]'::json)
        from shown)
    )))::text as body`
}

/** The small query (`SMALL_QUERY`): three columns of 20 tasks. */
export function smallQueryStatement(sql: Sql, first: number): Fragment {
  return sql`
    select json_build_object('data', json_build_object('tasks', json_build_object('edges',
      coalesce(json_agg(json_build_object('node', json_build_object('id', ${sql.unsafe(TASK_ID)}, 'status', t.status,
        'userName', t.author)) order by t.sort_at desc, t.id desc), '[]'::json)
    )))::text as body
    from (select service_code, task_id, status, author, sort_at, id from tasks order by sort_at desc, id desc limit
      ${first}) t`
}
