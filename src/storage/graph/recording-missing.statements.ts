import { and, asc, desc, eq, inArray, notExists, sql } from 'drizzle-orm'
import { type Db, resultRows } from '../database.client.js'
import { ownedBy } from '../tables/task.owner.js'
import { recordingMissing, recordings } from '../tables/recording.table.js'
import type { StoredTaskNode } from '../tables/task.node.js'

/** A task just decided to have a missing recording, with its stored node (for the event). */
export interface MissingRecording {
  serviceCode: string
  taskId: string
  node: StoredTaskNode | null
}

type Claimed = { service_code: string; task_id: string; node: StoredTaskNode | null }

/**
 * How far back, beyond the grace, a task's live start may be for its recording to be looked for:
 * the bound that keeps the look on the status index, not every task ever ended. A live that ran
 * longer than this is not checked.
 */
export const MISSING_HORIZON_MS = 7 * 86_400_000

/**
 * Decides, in the caller's transaction, which tasks' recordings are missing: ended with
 * `live_only` 0 at least `graceMs` ago (its end, else its row's last change), and no recording
 * of the task in the catalogue. Each is kept in `recording_missing` once: a task another
 * instance decided first is not given back, so the caller tells only what it decided.
 */
export async function claimMissingRecordings(
  tx: Db,
  graceMs: number,
  now: Date,
  limit: number,
): Promise<MissingRecording[]> {
  const at = sql`${now.toISOString()}::timestamptz`
  const ended = sql.raw(`case when jsonb_typeof(t.node->'endedAt') = 'number' and abs((t.node->>'endedAt')::numeric) <
      253402300799999
    then timestamptz 'epoch' + (t.node->>'endedAt')::numeric::bigint * interval '1 millisecond' else t.updated_at end`)
  const result = await tx.execute(sql`
    with claimed as (
      insert into recording_missing (service_code, task_id, told_at)
      select t.service_code, t.task_id, ${at} from tasks t
      where t.status = 'ENDED' and t.sort_at >= ${at} - ${graceMs + MISSING_HORIZON_MS}::float8 * interval
        '1 millisecond'
        and t.node->'liveOnly' = 'false'::jsonb
        and ${ended} <= ${at} - ${graceMs}::float8 * interval '1 millisecond'
        and not exists (select 1 from recordings r where r.service_code = t.service_code and r.task_id = t.task_id)
        and not exists (select 1 from recording_missing m where m.service_code = t.service_code and m.task_id =
          t.task_id)
      order by t.sort_at
      limit ${limit}
      on conflict do nothing
      returning service_code, task_id)
    select c.service_code, c.task_id, t.node from claimed c
    join tasks t on t.service_code = c.service_code and t.task_id = c.task_id`)
  return resultRows<Claimed>(result).map((row) => ({
    serviceCode: row.service_code,
    taskId: row.task_id,
    node: row.node,
  }))
}

/** A task told as missing its recording, and when. */
export type MissingRow = typeof recordingMissing.$inferSelect

/**
 * The tasks told as missing their recording and still without one, the latest told first, within
 * the codes a caller may read (a recording that came late takes its task off the list).
 */
export async function latestMissing(
  db: Db,
  codes: readonly string[] | undefined,
  max: number,
  userName?: string,
): Promise<MissingRow[]> {
  if (codes?.length === 0) return []
  // A broadcaster's own view: only the tasks the user started.
  const owned = userName === undefined ? undefined : ownedBy('recording_missing', userName)
  const scope = and(codes ? inArray(recordingMissing.serviceCode, [...codes]) : undefined, owned)
  const late = db
    .select({ one: sql`1` })
    .from(recordings)
    .where(
      and(eq(recordings.serviceCode, recordingMissing.serviceCode), eq(recordings.taskId, recordingMissing.taskId)),
    )
  const order = [desc(recordingMissing.toldAt), asc(recordingMissing.taskId)]
  return db
    .select()
    .from(recordingMissing)
    .where(and(scope, notExists(late)))
    .orderBy(...order)
    .limit(max)
}
