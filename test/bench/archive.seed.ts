import type postgres from 'postgres'
import type { ListedFile } from '../../src/simulator/list-files.answer.js'

/** The one service code of the archive bench's catalogue. */
export const ARCHIVE_CODE = 'ARCHIVE'
/** How many users the recordings belong to: `user-0000` … `user-0999`. */
export const ARCHIVE_USERS = 1000
// The newest recording's time; the catalogue spreads back a year from here, in whole seconds.
const NEWEST = '2026-11-01T00:00:00Z'
// Tasks are kept for the newest recordings, this many at most.
const TASKS_MAX = 100_000

/** A user's name as the seed writes it. */
export const userName = (n: number) => `user-${String(n % ARCHIVE_USERS).padStart(4, '0')}`

/**
 * `count` recordings of one service code in one `insert … select … from generate_series`, into a
 * database livegate's migrations made (the table as the catalogue keeps it, every index in place).
 * Recording `k` (oldest first, so row ids grow with time) belongs to user `k % 1000`; `a` is its
 * age rank (0 the newest). Where it was seen cycles in groups mixing both ways per user: seven in
 * ten only listed, two seen both ways, one only called back (never among the newest 1,000, which
 * the list's latest answers all named). Callback rows have their task; one listed file in ten is
 * linked by its name.
 */
export async function seedRecordings(client: postgres.Sql, count: number): Promise<number> {
  const begun = performance.now()
  // The secondary indexes are built once after the rows, from their own definitions (faster than
  // kept up row by row), then stand as the migrations made them.
  const indexes = await client<{ name: string; def: string }[]>`select indexname as name, indexdef as def
    from pg_indexes where tablename = 'recordings' and indexname not in
      (select conname from pg_constraint where conrelid = 'recordings'::regclass)`
  for (const index of indexes) await client.unsafe(`drop index "${index.name}"`)
  await client.unsafe(`
    insert into recordings (service_code, file_name, task_id, user_name, url, description, location, duration, width,
      height, views, likes, recorded_at, output_index, tag, path, format, input_bytes, http_output_bytes,
      live_started_at, received_at, from_callback, from_list, first_seen_at, sort_at, updated_at)
    select '${ARCHIVE_CODE}', f.name, case when f.called or f.s = 0 then 'task' || lpad(to_hex(f.k), 7, '0') end,
      'user-' || lpad((f.k % ${ARCHIVE_USERS})::text, 4, '0'), 'http://vod.example/${ARCHIVE_CODE}/mp4/' || f.name,
      case when f.listed then '' end, case when f.listed then '' end, 60 + f.k % 3600, 1280, 720,
      case when f.listed then (f.k * 7919) % 50000 end, case when f.listed then (f.k * 31) % 900 end,
      case when f.listed then f.at end, case when f.called then 0 end, case when f.called then 'mp4_hd' end,
      case when f.called then '${ARCHIVE_CODE}/mp4/' end,
      case when f.called then '{"container":"mp4","videoCodec":"libx264","audioCodec":"aac"}'::jsonb end,
      case when f.called then 1000000 + f.k end, case when f.called then 0 end,
      case when f.called then f.at - interval '1 hour' end, case when f.called then f.at + interval '5 seconds' end,
      f.called, f.listed, f.at, f.at, f.at
    from (select k, s, a, 'task' || lpad(to_hex(k), 7, '0') || '_mp4_hd.mp4' as name, s between 7 and 9 as called,
        s <> 9 or a < 1000 as listed,
        timestamptz '${NEWEST}' - make_interval(secs => floor(a::float8 * 31536000 / ${count})) as at
      from generate_series(0::bigint, ${count - 1}) k
      cross join lateral (select ${count - 1} - k as a) aa
      cross join lateral (select (a / 1000 + a) % 10 as s) ss) f`)
  // The newest recordings' users went live an hour after each of them: as many tasks (at most
  // 100k), none a listed file can be linked to (its name is not a task id, its user's task came
  // later), so every unlinked file of an answer is tried against a tasks table of real size.
  await client.unsafe(`
    insert into tasks (service_code, task_id, state, status, listed, author, sort_at, updated_at)
    select '${ARCHIVE_CODE}', 'live' || lpad(to_hex(k), 7, '0'),
      jsonb_build_object('v', 1, 'serviceCode', '${ARCHIVE_CODE}', 'taskId', 'live' || lpad(to_hex(k), 7, '0'),
        'outputs', '{}'::jsonb, 'recordings', '[]'::jsonb, 'thumbnails', '[]'::jsonb, 'resumes', '[]'::jsonb),
      'ENDED', false, 'user-' || lpad((k % ${ARCHIVE_USERS})::text, 4, '0'), f.at + interval '1 hour', f.at
    from generate_series(${Math.max(0, count - TASKS_MAX)}::bigint, ${count - 1}) k
    cross join lateral (select timestamptz '${NEWEST}'
      - make_interval(secs => floor((${count - 1} - k)::float8 * 31536000 / ${count})) as at) f`)
  await client.unsafe(`set maintenance_work_mem = '256MB'`)
  for (const index of indexes) await client.unsafe(index.def)
  // Vacuumed as a live catalogue would be by now: left to autovacuum, the seed's vacuum ran during
  // the measured answers, and its worker's CPU vanished from the count when it ended.
  await client.unsafe('vacuum analyze recordings')
  await client.unsafe('vacuum analyze tasks')
  return performance.now() - begun
}

/**
 * The archive as the simulated cloud lists it: the newest `limit` listed files with the values
 * the catalogue holds, so an answer of them says nothing new.
 */
export async function listedArchive(client: postgres.Sql, limit: number): Promise<ListedFile[]> {
  const rows = await client<
    {
      file_name: string
      at: string
      duration: number
      width: number
      height: number
      user_name: string
      url: string
      views: number
      likes: number
    }[]
  >`select file_name, extract(epoch from recorded_at)::bigint::text as at, duration, width, height, user_name, url,
      views, likes
    from recordings where service_code = ${ARCHIVE_CODE} and from_list order by sort_at desc, id desc limit ${limit}`
  return rows.map((row) => ({
    file_name: row.file_name,
    created_at: Number(row.at),
    duration: String(row.duration),
    width: row.width,
    height: row.height,
    user_name: row.user_name,
    description: '',
    url: row.url,
    location: '',
    access_cnt: row.views,
    zan_cnt: row.likes,
  }))
}
