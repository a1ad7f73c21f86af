import { and, asc, count, desc, eq, gte, inArray, lt, or, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../database.client.js'
import { ownedBy } from '../tables/task.owner.js'
import { type RecordingRow, recordings } from '../tables/recording.table.js'

/** Which recordings a catalogue read is about. */
export interface RecordingQuery {
  /** The codes the caller may read; undefined reads every code. */
  allowedCodes?: readonly string[] | undefined
  /** The caller's scope: only this user's recordings (`tables/task.owner.ts`; undefined: every user's). */
  allowedUserName?: string | undefined
  serviceCode?: string | undefined
  userName?: string | undefined
  /** A task's `hashed_id` (with `serviceCode` it names one task). */
  taskId?: string | undefined
  /** Seen in any of these channels; undefined or empty matches every recording. */
  seenIn?: ReadonlyArray<'CALLBACK' | 'FILE_LIST'> | undefined
  createdAfter?: Date | undefined
  createdBefore?: Date | undefined
}

/** A recording's place in the newest-first order: its sort time (ms) and row id. */
export interface RecordingKey {
  sortAt: number
  id: number
}

function conditions(query: RecordingQuery): SQL | undefined {
  const parts: Array<SQL | undefined> = []
  if (query.allowedCodes)
    parts.push(query.allowedCodes.length === 0 ? sql`false` : inArray(recordings.serviceCode, [...query.allowedCodes]))
  if (query.allowedUserName !== undefined) parts.push(ownedBy('recordings', query.allowedUserName))
  if (query.serviceCode !== undefined) parts.push(eq(recordings.serviceCode, query.serviceCode))
  if (query.userName !== undefined) parts.push(eq(recordings.userName, query.userName))
  if (query.taskId !== undefined) parts.push(eq(recordings.taskId, query.taskId))
  if (query.seenIn && query.seenIn.length > 0) {
    const seen = query.seenIn.map((source) =>
      source === 'CALLBACK' ? eq(recordings.fromCallback, true) : eq(recordings.fromList, true),
    )
    parts.push(or(...seen))
  }
  if (query.createdAfter) parts.push(gte(recordings.sortAt, query.createdAfter))
  if (query.createdBefore) parts.push(lt(recordings.sortAt, query.createdBefore))
  return and(...parts)
}

/** A page of recordings, newest first, after `after`, at most `limit` rows. */
export async function listRecordings(
  db: Db,
  query: RecordingQuery,
  after: RecordingKey | undefined,
  limit: number,
): Promise<RecordingRow[]> {
  const keyset = after
    ? sql`(${recordings.sortAt}, ${recordings.id}) < (${new Date(after.sortAt).toISOString()}::timestamptz,
      ${after.id})`
    : undefined
  return db
    .select()
    .from(recordings)
    .where(and(conditions(query), keyset))
    .orderBy(desc(recordings.sortAt), desc(recordings.id))
    .limit(limit)
}

/** How many recordings match, on every page together. */
export async function countRecordings(db: Db, query: RecordingQuery): Promise<number> {
  const [row] = await db.select({ n: count() }).from(recordings).where(conditions(query))
  return Number(row?.n ?? 0)
}

/** The catalogue's rows of these (service code, file name) keys, of any scope, in one statement. */
export async function recordingsByKeys(
  db: Db,
  keys: ReadonlyArray<{ serviceCode: string; fileName: string }>,
): Promise<RecordingRow[]> {
  if (keys.length === 0) return []
  return db
    .select()
    .from(recordings)
    .where(
      or(...keys.map((key) => and(eq(recordings.serviceCode, key.serviceCode), eq(recordings.fileName, key.fileName)))),
    )
}

/**
 * The most recordings `Task.recordings` lists of a task (its oldest): what the cost of an operation
 * counts it by, so a task's list must hold to it. The `recordings` connection pages through all.
 */
export const TASK_RECORDINGS = 100

/**
 * The recordings of these tasks, each task's in the order the catalogue learnt of them (oldest
 * first), at most {@link TASK_RECORDINGS} of each, by `<service code>\0<task id>`. A task of a code
 * outside `allowedCodes` has none.
 */
export async function recordingsOfTasks(
  db: Db,
  keys: ReadonlyArray<{ serviceCode: string; taskId: string }>,
  allowedCodes: readonly string[] | undefined,
  allowedUserName?: string,
): Promise<Map<string, RecordingRow[]>> {
  const byTask = new Map<string, RecordingRow[]>()
  const asked = allowedCodes ? keys.filter((key) => allowedCodes.includes(key.serviceCode)) : keys
  if (asked.length === 0) return byTask
  // By code, its task ids in one list: PostgreSQL reads `code = $1 and task_id in (…)` as one scan
  // of recordings_task_idx, where a page's 50 (code, task id) pairs were planned as a scan of the
  // whole table at 10k, and their 100 parameters cost more to bind and plan.
  const idsByCode = new Map<string, string[]>()
  for (const key of asked) {
    const ids = idsByCode.get(key.serviceCode)
    if (ids) ids.push(key.taskId)
    else idsByCode.set(key.serviceCode, [key.taskId])
  }
  const ofCodes = [...idsByCode].map(([code, ids]) =>
    and(eq(recordings.serviceCode, code), inArray(recordings.taskId, [...new Set(ids)])),
  )
  const rows = await db
    .select()
    .from(recordings)
    .where(and(or(...ofCodes), allowedUserName === undefined ? undefined : ownedBy('recordings', allowedUserName)))
    .orderBy(asc(recordings.id))
  for (const row of rows) {
    const key = `${row.serviceCode}\u0000${row.taskId}`
    const list = byTask.get(key)
    if (!list) byTask.set(key, [row])
    else if (list.length < TASK_RECORDINGS) list.push(row)
  }
  return byTask
}

/** A code's recordings first seen since `since` that the list names and no type 2 announced. */
export async function countUnannounced(db: Db, serviceCode: string, since: Date): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(recordings)
    .where(
      and(
        eq(recordings.serviceCode, serviceCode),
        eq(recordings.fromList, true),
        eq(recordings.fromCallback, false),
        gte(recordings.firstSeenAt, since),
      ),
    )
  return Number(row?.n ?? 0)
}
