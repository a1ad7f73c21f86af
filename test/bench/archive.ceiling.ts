import postgres from 'postgres'
import { type CeilingServer, serveCeiling } from './ceiling.http.js'

/**
 * The catalogue page's ceiling: bare node:http and postgres.js, no GraphQL engine and no livegate
 * code, answering the archive bench's `RecordingPage` with one statement whose one value is the
 * response body. It knows the stored layout of `recordings` and the published schema's shapes
 * (a Recording's id is base64url of `Recording:` and the JSON array of its code and file name; a
 * cursor, of `r1:<sort time in ms>:<row id>`), written here again, sharing nothing.
 *
 * A filter by user alone reads each service code's part of the (code, user, time) index: the
 * codes are found by a loose index scan (one probe per code), so the statement stays an index
 * read whatever the catalogue's size. It is the best one statement the stored indexes allow.
 */
export type ArchiveCeiling = CeilingServer

interface Variables {
  userName: string
  serviceCode?: string
  first?: number
  after?: string
}

const CURSOR = /^r1:(\d{1,15}):([1-9]\d{0,15})$/
const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`
// PostgreSQL's base64 breaks lines every 76 characters; base64url has none.
function base64url(text: string): string {
  const base64 = `encode(convert_to(${text}, 'UTF8'), 'base64')`
  return `rtrim(translate(${base64}, E'+/\\n', '-_'), '=')`
}
const CURSOR_OF = base64url(`'r1:' || floor(extract(epoch from p.sort_at) * 1000)::bigint || ':' || p.id`)
const NODE = `json_build_object(
    'id', ${base64url(`'Recording:[' || to_json(p.service_code)::text || ',' || to_json(p.file_name)::text || ']'`)},
    'fileName', p.file_name, 'playUrl', p.url, 'userName', p.user_name, 'views', p.views, 'likes', p.likes,
    'createdAt', to_char(coalesce(p.recorded_at, p.live_started_at) at time zone 'UTC', ${ISO}),
    'seenIn', array_remove(array[case when p.from_callback then 'CALLBACK' end,
      case when p.from_list then 'FILE_LIST' end], null))`

/** The statement answering one page: the codes to read, the page of each, the newest `first` of all. */
function pageStatement(sql: postgres.Sql, variables: Variables) {
  const first = variables.first ?? 50
  let after = sql``
  if (variables.after) {
    const match = CURSOR.exec(Buffer.from(variables.after, 'base64url').toString('utf8'))
    if (!match) throw new Error(`not a recording cursor: ${variables.after}`)
    const at = new Date(Number(match[1])).toISOString()
    after = sql`and (r.sort_at, r.id) < (${at}::timestamptz, ${match[2] as string}::bigint)`
  }
  const codes = variables.serviceCode
    ? sql`select ${variables.serviceCode}::text as code`
    : sql`select min(service_code) as code from recordings
      union all
      select (select min(service_code) from recordings where service_code > c.code)
      from codes c where c.code is not null`
  return sql`
    with recursive codes(code) as (${codes}),
    page as materialized (
      select r.* from codes c cross join lateral (
        select r.id, r.service_code, r.file_name, r.url, r.user_name, r.views, r.likes, r.recorded_at,
          r.live_started_at, r.from_callback, r.from_list, r.sort_at
        from recordings r where r.service_code = c.code and r.user_name = ${variables.userName} ${after}
        order by r.sort_at desc, r.id desc limit ${first + 1}) r
      where c.code is not null
      order by r.sort_at desc, r.id desc limit ${first + 1}
    ), shown as (
      select p.*, row_number() over (order by p.sort_at desc, p.id desc) as n from page p
    )
    select json_build_object('data', json_build_object('recordings', json_build_object(
      'totalCount', (select coalesce(sum(x.n), 0) from codes c
        cross join lateral (select count(*) as n from recordings r
        where r.service_code = c.code and r.user_name = ${variables.userName}) x where c.code is not null),
      'pageInfo', json_build_object('hasNextPage', (select count(*) from page) > ${first},
        'endCursor', (select ${sql.unsafe(CURSOR_OF)} from shown p where p.n <= ${first} order by p.n desc limit 1)),
      'edges', (select coalesce(json_agg(json_build_object('node', ${sql.unsafe(NODE)}) order by p.n), '[]'::json)
        from shown p where p.n <= ${first})
    )))::text as body`
}

/** Starts the ceiling on a database of livegate's layout; 10 connections, livegate's own pool size. */
export async function startArchiveCeiling(databaseUrl: string): Promise<ArchiveCeiling> {
  const sql = postgres(databaseUrl, { max: 10, onnotice: () => {}, connection: { jit: 'off' } })
  return serveCeiling<Variables>(sql, ({ operationName, variables }) => {
    if (operationName !== 'RecordingPage' || !variables) throw new Error(`the ceiling knows no ${operationName}`)
    return pageStatement(sql, variables)
  })
}
