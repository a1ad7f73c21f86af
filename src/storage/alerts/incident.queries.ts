import { and, count, desc, eq, getTableColumns, inArray, lt, ne, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../database.client.js'
import { ownedBy, taskAuthorOf } from '../tables/task.owner.js'
import { type IncidentRow, type IncidentStateValue, incidents } from '../tables/incident.table.js'

/** Which incidents to read; every criterion given must hold. */
export interface IncidentCriteria {
  serviceCode?: string | null
  rule?: string | null
  state?: IncidentStateValue | null
  taskId?: string | null
  /** The caller's scope: only these service codes (undefined: all). */
  allowedServiceCodes?: readonly string[] | undefined
  /**
   * The caller's scope: only the incidents of this user's tasks (a broadcaster's own view; a
   * service's incidents are not theirs). Undefined: every incident.
   */
  allowedUserName?: string | undefined
}

function where(criteria: IncidentCriteria, before?: number): SQL | undefined {
  const conditions: Array<SQL | undefined> = [
    criteria.serviceCode != null ? eq(incidents.serviceCode, criteria.serviceCode) : undefined,
    criteria.rule != null ? eq(incidents.rule, criteria.rule) : undefined,
    criteria.state != null ? eq(incidents.state, criteria.state) : undefined,
    criteria.taskId != null ? eq(incidents.taskId, criteria.taskId) : undefined,
    criteria.allowedServiceCodes !== undefined
      ? inArray(incidents.serviceCode, [...criteria.allowedServiceCodes])
      : undefined,
    criteria.allowedUserName !== undefined ? ownedBy('incidents', criteria.allowedUserName) : undefined,
    before !== undefined ? lt(incidents.id, before) : undefined,
  ]
  return and(...conditions.filter((c): c is SQL => c !== undefined))
}

/** A page of incidents, newest first: at most `limit` older than the row `before`. */
export async function incidentPage(
  db: Db,
  criteria: IncidentCriteria,
  before: number | undefined,
  limit: number,
): Promise<IncidentRow[]> {
  // inArray of an empty list matches nothing, as an empty scope must.
  if (criteria.allowedServiceCodes?.length === 0) return []
  return db.select().from(incidents).where(where(criteria, before)).orderBy(desc(incidents.id)).limit(limit)
}

/** How many incidents match. */
export async function countIncidents(db: Db, criteria: IncidentCriteria): Promise<number> {
  if (criteria.allowedServiceCodes?.length === 0) return 0
  const [row] = await db.select({ n: count() }).from(incidents).where(where(criteria))
  return row?.n ?? 0
}

/** An incident as the realtime engine reads it: with who started its task, which a broadcaster's view matches by. */
export type OwnedIncidentRow = IncidentRow & { taskAuthor?: string | null }

/** The incidents with these ids (any order). */
export async function incidentsByIds(db: Db, ids: readonly number[]): Promise<OwnedIncidentRow[]> {
  if (ids.length === 0) return []
  return db
    .select({ ...getTableColumns(incidents), taskAuthor: taskAuthorOf('incidents') })
    .from(incidents)
    .where(inArray(incidents.id, [...ids]))
}

/** Whether a row matches criteria: what the realtime engine asks of each changed incident. */
export function incidentMatches(criteria: IncidentCriteria, row: OwnedIncidentRow): boolean {
  if (criteria.serviceCode != null && row.serviceCode !== criteria.serviceCode) return false
  if (criteria.rule != null && row.rule !== criteria.rule) return false
  if (criteria.state != null && row.state !== criteria.state) return false
  if (criteria.taskId != null && row.taskId !== criteria.taskId) return false
  if (criteria.allowedServiceCodes !== undefined && !criteria.allowedServiceCodes.includes(row.serviceCode))
    return false
  if (criteria.allowedUserName !== undefined && row.taskAuthor !== criteria.allowedUserName) return false
  return true
}

/** Every incident not resolved (open or acknowledged), oldest first. */
export async function unresolvedIncidents(db: Db): Promise<IncidentRow[]> {
  return db.select().from(incidents).where(ne(incidents.state, 'RESOLVED')).orderBy(incidents.id)
}

/** How many incidents are not resolved, per rule and severity: the gauge every instance agrees on. */
export async function unresolvedCounts(db: Db): Promise<Array<{ rule: string; severity: string; n: number }>> {
  const rows = await db
    .select({ rule: incidents.rule, severity: incidents.severity, n: count() })
    .from(incidents)
    .where(ne(incidents.state, 'RESOLVED'))
    .groupBy(incidents.rule, incidents.severity)
  return rows.map((row) => ({ ...row, n: Number(row.n) }))
}

/** The most incidents `Task.incidents` lists (newest first): a flapping task keeps its latest. */
export const TASK_INCIDENTS = 100

/**
 * The incidents of some tasks, newest first, at most {@link TASK_INCIDENTS} of each: `Task.incidents`
 * of a page, batched in one statement. The limit is per task (a lateral read of each task's newest
 * on incidents_task_idx): one limit over all of them let a task with many newer incidents take the
 * whole batch's share, and the others showed none.
 */
export async function incidentsOfTasks(
  db: Db,
  keys: ReadonlyArray<{ serviceCode: string; taskId: string }>,
): Promise<IncidentRow[]> {
  if (keys.length === 0) return []
  const pairs = sql.join(
    keys.map((key) => sql`(${key.serviceCode}::text, ${key.taskId}::text)`),
    sql`, `,
  )
  const newest = sql`select newest.id from (values ${pairs}) as asked (service_code, task_id)
    cross join lateral (
      select i.id from incidents i
      where i.service_code = asked.service_code and i.task_id = asked.task_id
      order by i.id desc
      limit ${TASK_INCIDENTS}
    ) as newest`
  return db.select().from(incidents).where(sql`${incidents.id} in (${newest})`).orderBy(desc(incidents.id))
}
