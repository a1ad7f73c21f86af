import type postgres from 'postgres'

/**
 * The independent ceiling's SQL: each operation the query bench sends, answered by one statement
 * that reads the tables and builds the whole response JSON in PostgreSQL. It knows the stored
 * layout (the `tasks` row and its `state` jsonb, the `callbacks` row and its `fields`) and the
 * published schema's shapes, and nothing of livegate's code: a schema rename is an edit here.
 * It covers what the bench's data holds; where livegate reads a corner the data never reaches
 * (a listed task's percent-encoded `opaque` without a live start, a stored callback the current
 * parser would refuse), it does not follow, and the deep-equal check before measuring says so.
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
// A jsonb value, with JSON null read as absent (what `??` does in the fold's reader).
const nn = (value: string) => `nullif(${value}, 'null'::jsonb)`
// The form fields a notification shows, each read once per row as its first value as sent (a
// repeated field is stored as an array), '' as absent; `f.<name>` below.
const FIELDS = ['url', 'tag', 'created_at', 'format', 'reach_end', 'output_idx', 'input_bytes', 'file_name', 'duration', 'width', 'height', 'status']
const FIELDS_SQL = FIELDS.map((name) => `nullif(coalesce(c.fields->'${name}'->>0, c.fields->>'${name}'), '') as ${name}`).join(', ')
const field = (name: string) => `f.${name}`
const int32 = (text: string) => `case when ${text} ~ '^-?\\d{1,10}$' and ${text}::bigint between -2147483648 and 2147483647 then ${text}::int end`
const integer = (text: string) => `case when ${text} ~ '^-?\\d{1,15}$' then ${text}::bigint end`
const decimal = (text: string) => `case when ${text} ~ '^-?\\d{1,15}(\\.\\d{1,9})?$' then ${text}::numeric end`
const stampOf = (register: string) => `((${register}#>>'{stamp,at}')::bigint, (${register}#>>'{stamp,key}') collate "C")`
const formatOf = (format: string) =>
  `case when ${nn(format)} is not null then json_build_object('container', ${format}->'container', 'videoCodec', coalesce(${format}->'videoCodec', 'null'), 'audioCodec', coalesce(${format}->'audioCodec', 'null')) end`

// One notification, its kind's fields read from the fields as sent.
const COMMON = `'id', c.id::text, 'type', c.type, 'taskId', c.task_id, 'userName', c.user_name, 'receivedAt', ${isoOf('c.received_at')},
    'deliveries', c.deliveries, 'signatureVerified', c.signature = 'verified'`
const KIND_FIELDS: Array<[type: number, typename: string, fields: string]> = [
  [0, 'LiveStartNotification', `'url', ${field('url')}, 'tag', ${field('tag')},
      'createdAt', case when ${integer(field('created_at'))} between 0 and 99999999999 then ${isoOfMs(`${field('created_at')}::bigint * 1000`)} end,
      'format', case when ${field('format')} is not null then json_build_object('container', split_part(${field('format')}, '/', 1),
        'videoCodec', nullif(split_part(${field('format')}, '/', 2), ''), 'audioCodec', nullif(split_part(${field('format')}, '/', 3), '')) end`],
  [1, 'LiveEndNotification', `'reachEnd', case ${field('reach_end')} when '1' then true when '0' then false end,
      'outputIndex', ${int32(field('output_idx'))}, 'inputBytes', ${integer(field('input_bytes'))}`],
  [2, 'ArchivedNotification', `'url', ${field('url')}, 'fileName', ${field('file_name')}, 'duration', ${decimal(field('duration'))}`],
  [8, 'ClientDisconnectNotification', ''],
  [9, 'ThumbnailNotification', `'url', ${field('url')}, 'width', ${int32(field('width'))}, 'height', ${int32(field('height'))}`],
  [15, 'LiveResumeNotification', `'status', case ${field('status')} when '0' then 'WAITING' when '1' then 'RESUMED' end`],
]
const NOTIFICATION = `case c.type ${KIND_FIELDS.map(([type, typename, fields]) => `when ${type} then json_build_object('__typename', '${typename}', ${COMMON}${fields ? `, ${fields}` : ''})`).join('\n    ')}
    else json_build_object('__typename', 'UnknownNotification', ${COMMON}) end`

const base64url = (text: string) => `rtrim(translate(encode(convert_to(${text}, 'UTF8'), 'base64'), '+/', '-_'), '=')`
const TASK_CURSOR = base64url(`'t1:' || (extract(epoch from t.sort_at) * 1000)::bigint || ':' || t.id`)

// Everything a task of the page shows, from its row (`t`) and its state (`s`, the listed task `lt`, `st`, `en`).
const TASK_NODE = `json_build_object(
    'id', t.task_id, 'serviceCode', t.service_code, 'vsId', coalesce(s#>>'{vsId,value}', lt->>'vs_id'), 'author', t.author,
    'status', t.status, 'endReason', t.end_reason, 'isResume', coalesce(st->'isResume', 'null'),
    'liveOnly', coalesce(${nn(`st->'liveOnly'`)}, en->'liveOnly', 'null'),
    'opaque', coalesce(${nn(`st->'opaque'`)}, lt->'opaque', 'null'),
    'startedAt', ${isoOfMs(`coalesce(s->>'firstCreatedAt', s#>>'{sighting,firstSeenAt}', s->>'firstEventAt')`)},
    'endedAt', case when t.end_reason in ('USER_STOPPED', 'ABNORMAL') then ${isoOfMs(`s#>>'{end,stamp,at}'`)}
      when t.end_reason = 'VANISHED' then ${isoOfMs(`s#>>'{sighting,lastSeenAt}'`)} end,
    'listed', t.listed, 'httpLiveUrl', lt->>'http_live_url',
    'inputBytes', greatest((lt->>'input_bytes')::bigint, (en->>'inputBytes')::bigint),
    'outputs', (${outputs()}),
    'recordings', (select coalesce(json_agg(json_build_object('outputIndex', r->'value'->'outputIdx', 'tag', r->'value'->'tag', 'url', r->'value'->'url',
        'fileName', r->'value'->'fileName', 'duration', r->'value'->'duration', 'width', coalesce(r#>'{value,size,width}', 'null'),
        'height', coalesce(r#>'{value,size,height}', 'null'), 'inputBytes', r->'value'->'inputBytes',
        'createdAt', ${isoOfMs(`r#>>'{value,createdAt}'`)}, 'receivedAt', ${isoOfMs(`r#>>'{value,receivedAt}'`)},
        'format', case when ${nn(`r#>'{value,format}'`)} is not null then json_build_object('container', r#>'{value,format,container}') end)
      order by ${stampOf('r')}), '[]'::json) from jsonb_array_elements(s->'recordings') r),
    'thumbnails', (select coalesce(json_agg(json_build_object('url', h->'value'->'url', 'width', h->'value'->'width', 'height', h->'value'->'height',
        'receivedAt', ${isoOfMs(`h#>>'{value,receivedAt}'`)}) order by ${stampOf('h')} desc), '[]'::json) from jsonb_array_elements(s->'thumbnails') h),
    'notifications', json_build_object('edges', (select coalesce(json_agg(json_build_object('cursor', ${base64url(`'n1:' || c.id`)}, 'node', ${NOTIFICATION})
      order by c.id desc), '[]'::json) from (select id, type, task_id, user_name, received_at, deliveries, signature, fields from callbacks
        where task_id = t.task_id order by id desc limit 5) c cross join lateral (select ${FIELDS_SQL}) f))
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
      'format', case when coalesce(l.o->>'format', '') <> '' then json_build_object('container', l.o->'format',
          'videoCodec', coalesce(l.o->'video_codec_name', 'null'), 'audioCodec', coalesce(l.o->'audio_codec_name', 'null'))
        else ${formatOf(`coalesce(${nn(`o.st#>'{value,format}'`)}, o.en#>'{value,format}')`)} end,
      'streams', (select coalesce(json_agg(json_build_object('index', x->'index', 'kind', case x->>'codec_type' when '0' then 'VIDEO' when '1' then 'AUDIO' end,
          'codecId', x->'codec_id', 'width', x->'width', 'height', x->'height',
          'copyMode', case x->>'copy' when '1' then 'COPY' when '0' then 'TRANSCODE' when '2' then 'TRANSCODE' end, 'bitRate', x->'bit_rate') order by n), '[]'::json)
        from jsonb_array_elements(coalesce(l.o->'streams', '[]'::jsonb)) with ordinality as sx(x, n)),
      'recordings', (select coalesce(json_agg(json_build_object('outputIndex', r->'value'->'outputIdx', 'url', r->'value'->'url',
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
  const status = args.status && args.status.length > 0 ? sql`and t.status = any(${args.status as string[]}::text[])` : sql``
  const statusAll = args.status && args.status.length > 0 ? sql`where status = any(${args.status as string[]}::text[])` : sql``
  const after = args.after ? sql`and (t.sort_at, t.id) < (${new Date(args.after.sortAtMs).toISOString()}::timestamptz, ${args.after.id}::bigint)` : sql``
  return sql`
    with page as materialized (
      -- The state read out of its TOAST once (a fresh value is kept whole), not once per path into it.
      select t.id, t.task_id, t.service_code, t.status, t.end_reason, t.author, t.listed, t.sort_at, t.state || '{}'::jsonb as state
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
      'pageInfo', json_build_object('hasNextPage', (select count(*) from page) > ${args.first}, 'endCursor', (select cursor from shown order by n desc limit 1)),
      'edges', (select coalesce(json_agg(json_build_object('cursor', cursor, 'node', node) order by n), '[]'::json) from shown)
    )))::text as body`
}

/** The small query (`SMALL_QUERY`): three columns of 20 tasks. */
export function smallQueryStatement(sql: Sql, first: number): Fragment {
  return sql`
    select json_build_object('data', json_build_object('tasks', json_build_object('edges',
      coalesce(json_agg(json_build_object('node', json_build_object('id', t.task_id, 'status', t.status, 'author', t.author)) order by t.sort_at desc, t.id desc), '[]'::json)
    )))::text as body
    from (select task_id, status, author, sort_at, id from tasks order by sort_at desc, id desc limit ${first}) t`
}
