import { sql } from 'drizzle-orm'
import type { MediaFormatNode } from '../../fold/graph.model.js'
import type { ListedFile } from '../../model/list-files.schema.js'
import { type Db, resultRows } from '../database.client.js'
import { jsonParameter } from '../tables/json.rows.js'

/** A recording a type 2 callback announced, as the catalogue keeps it. */
export interface AnnouncedRecording {
  fileName: string
  taskId: string
  userName: string | null
  url: string | null
  duration: number | null
  width: number | null
  height: number | null
  outputIndex: number | null
  tag: string | null
  path: string | null
  format: MediaFormatNode | null
  inputBytes: number | null
  httpOutputBytes: number | null
  /** The callback's `created_at`: the live start by the cloud's clock. */
  liveStartedAt: Date | null
  receivedAt: Date
}

/** A catalogue row a statement wrote, and whether it is new (the first time either channel told it). */
export interface WrittenRecording {
  id: number
  fileName: string
  taskId: string | null
  created: boolean
}

type Written = { id: string | number; file_name: string; task_id: string | null; created: boolean }

// A listed file's task, when one task of the code is named without doubt: by the file's name
// (the task id, as the cloud names its archives), else as the only task of the file's user that
// went live in the six hours before it was recorded.
const LINK = sql.raw(`coalesce(
  (select t.task_id from tasks t where t.service_code = w.service_code
     and t.task_id = regexp_replace(w.file_name, '\\.[^.]*$', '')),
  (select min(t.task_id) from tasks t where t.service_code = w.service_code and t.author = w.user_name
     and w.recorded_at is not null and t.sort_at between w.recorded_at - interval '6 hours' and w.recorded_at
   having count(*) = 1))`)

/**
 * One `list_files` answer into the catalogue, in one statement. A file new to the catalogue is
 * inserted and linked to its task (see LINK; a file not yet linked is tried again, as its task
 * may have been folded since); a known one is written only when the list says
 * something new of it (first listed, views, likes, description, location), so an answer with
 * nothing new writes nothing, however large the archive. Gives back the rows written.
 */
export async function upsertListedFiles(
  db: Db,
  serviceCode: string,
  files: readonly ListedFile[],
  now: Date,
): Promise<WrittenRecording[]> {
  if (files.length === 0) return []
  // postgres.js takes no Date in a raw statement's parameters: the time goes as text, cast.
  const at = sql`${now.toISOString()}::timestamptz`
  // One row per file: a statement may not write a row twice, and an answer may name a file twice (the later
  // listing's counts are the newer).
  const unique = [...new Map(files.map((file) => [file.fileName, file])).values()]
  const rows = unique.map((file) => ({
    service_code: serviceCode,
    file_name: file.fileName,
    user_name: file.userName,
    url: file.url,
    description: file.description,
    location: file.location,
    duration: file.duration,
    width: file.width,
    height: file.height,
    views: file.views,
    likes: file.likes,
    recorded_at: file.createdAt?.toISOString() ?? null,
  }))
  const result = await db.execute(sql`
    insert into recordings as r (service_code, file_name, task_id, user_name, url, description, location, duration,
      width, height, views, likes, recorded_at, from_list, first_seen_at, sort_at, updated_at)
    select w.service_code, w.file_name, linked.task_id, w.user_name, w.url, w.description, w.location, w.duration,
      w.width, w.height, w.views, w.likes, w.recorded_at, true, ${at}, coalesce(w.recorded_at, ${at}), ${at}
    from jsonb_to_recordset(${jsonParameter(rows)}) as w(service_code text, file_name text, user_name text, url text,
      description text, location text, duration float8, width int, height int, views int, likes int,
      recorded_at timestamptz)
    -- A probe of the unique key per listed file, at every size: without the limit the lateral is pulled
    -- up into a join, which a small catalogue plans as a hash of a whole scan.
    left join lateral (select k.task_id, k.from_list, k.views, k.likes, k.description, k.location from recordings k
      where k.service_code = w.service_code and k.file_name = w.file_name limit 1) known on true
    cross join lateral (select case when known.task_id is null then ${LINK} else known.task_id end as task_id) linked
    -- A file with nothing new is left out here: let through, the conflict clause would lock its row (a
    -- write, and a transaction id) even where its own condition then writes nothing.
    where known.from_list is not true or (known.task_id is null and linked.task_id is not null)
      or (known.views, known.likes, known.description, known.location) is distinct from
         (w.views, w.likes, w.description, w.location)
    on conflict (service_code, file_name) do update set
      task_id = coalesce(r.task_id, excluded.task_id), user_name = coalesce(r.user_name, excluded.user_name),
      url = coalesce(excluded.url, r.url), description = excluded.description, location = excluded.location,
      duration = coalesce(r.duration, excluded.duration), width = coalesce(r.width, excluded.width),
      height = coalesce(r.height, excluded.height), views = excluded.views, likes = excluded.likes,
      recorded_at = coalesce(excluded.recorded_at, r.recorded_at), sort_at = coalesce(excluded.recorded_at, r.sort_at),
      from_list = true, updated_at = excluded.updated_at
    -- Still checked here: a row another instance wrote since the probe read it.
    where not r.from_list or (r.task_id is null and excluded.task_id is not null)
      or (r.views, r.likes, r.description, r.location) is distinct from
         (excluded.views, excluded.likes, excluded.description, excluded.location)
    returning id, file_name, task_id, (xmax = 0) as created`)
  return resultRows<Written>(result).map((row) => ({
    id: Number(row.id),
    fileName: row.file_name,
    taskId: row.task_id,
    created: row.created,
  }))
}

/**
 * Recordings type 2 callbacks announced, into the catalogue, in the caller's transaction (the
 * projector's). The callback's task is the truth of the link; a row already announced for the
 * same task is not written again.
 */
export async function upsertAnnouncedRecordings(
  tx: Db,
  serviceCode: string,
  announced: readonly AnnouncedRecording[],
  now: Date,
): Promise<WrittenRecording[]> {
  if (announced.length === 0) return []
  const at = sql`${now.toISOString()}::timestamptz`
  const rows = onePerFile(announced).map((a) => ({
    service_code: serviceCode,
    file_name: a.fileName,
    task_id: a.taskId,
    user_name: a.userName,
    url: a.url,
    duration: a.duration,
    width: a.width,
    height: a.height,
    output_index: a.outputIndex,
    tag: a.tag,
    path: a.path,
    format: a.format,
    input_bytes: a.inputBytes,
    http_output_bytes: a.httpOutputBytes,
    live_started_at: a.liveStartedAt?.toISOString() ?? null,
    received_at: a.receivedAt.toISOString(),
  }))
  const result = await tx.execute(sql`
    insert into recordings as r (service_code, file_name, task_id, user_name, url, duration, width, height,
      output_index, tag, path, format, input_bytes, http_output_bytes, live_started_at, received_at, from_callback,
      first_seen_at, sort_at, updated_at)
    select w.service_code, w.file_name, w.task_id, w.user_name, w.url, w.duration, w.width, w.height, w.output_index,
      w.tag, w.path, w.format, w.input_bytes, w.http_output_bytes, w.live_started_at, w.received_at, true, ${at},
      ${at}, ${at}
    from jsonb_to_recordset(${jsonParameter(rows)}) as w(service_code text, file_name text, task_id text,
      user_name text, url text, duration float8, width int, height int, output_index int, tag text, path text,
      format jsonb, input_bytes bigint, http_output_bytes bigint, live_started_at timestamptz, received_at timestamptz)
    on conflict (service_code, file_name) do update set
      task_id = excluded.task_id, user_name = coalesce(r.user_name, excluded.user_name),
      url = coalesce(r.url, excluded.url),
      duration = coalesce(r.duration, excluded.duration), width = coalesce(r.width, excluded.width),
      height = coalesce(r.height, excluded.height), output_index = excluded.output_index, tag = excluded.tag,
      path = excluded.path, format = excluded.format, input_bytes = excluded.input_bytes,
      http_output_bytes = excluded.http_output_bytes, live_started_at = excluded.live_started_at,
      received_at = excluded.received_at, from_callback = true, updated_at = excluded.updated_at
    where not r.from_callback or r.task_id is distinct from excluded.task_id
    returning id, file_name, task_id, (xmax = 0) as created`)
  return resultRows<Written>(result).map((row) => ({
    id: Number(row.id),
    fileName: row.file_name,
    taskId: row.task_id,
    created: row.created,
  }))
}

/**
 * One row per file name: a statement's conflict clause may touch a row once, and one projector
 * batch can name a file twice (two tasks' type 2 callbacks of one file, or a callback and its copy).
 * Merged as the upsert merges them one after another, by receipt: a later row of the same task
 * changes nothing, one of another task takes the row over, keeping what the earlier one knew.
 */
function onePerFile(announced: readonly AnnouncedRecording[]): AnnouncedRecording[] {
  const byFile = new Map<string, AnnouncedRecording>()
  const byReceipt = [...announced].sort((a, b) => a.receivedAt.getTime() - b.receivedAt.getTime())
  for (const later of byReceipt) {
    const earlier = byFile.get(later.fileName)
    if (earlier === undefined) byFile.set(later.fileName, later)
    else if (earlier.taskId !== later.taskId)
      byFile.set(later.fileName, {
        ...later,
        userName: earlier.userName ?? later.userName,
        url: earlier.url ?? later.url,
        duration: earlier.duration ?? later.duration,
        width: earlier.width ?? later.width,
        height: earlier.height ?? later.height,
      })
  }
  return [...byFile.values()]
}
