import { and, count, desc, eq, getTableColumns, inArray, lt, type SQL } from 'drizzle-orm'
import type { ActionKind, ActionState } from '../../model/action.model.js'
import { type ActionRow, actions } from '../tables/action.table.js'
import { ownedBy, taskAuthorOf } from '../tables/task.owner.js'
import type { Db } from '../database.client.js'

/** Which actions to read; every criterion given must hold. */
export interface ActionCriteria {
  serviceCode?: string | null
  kind?: ActionKind | null
  /** Any of these stored states (GraphQL's FAILED is FAILED or REFUSED). */
  states?: readonly ActionState[] | null
  taskId?: string | null
  /** The caller's scope: only these service codes (undefined: all). */
  allowedServiceCodes?: readonly string[] | undefined
  /**
   * The caller's scope: only the acts on this user's tasks and the messages sent to the user (a
   * broadcaster's own view). Undefined: every action.
   */
  allowedUserName?: string | undefined
}

function where(criteria: ActionCriteria, before?: number): SQL | undefined {
  const conditions: Array<SQL | undefined> = [
    criteria.serviceCode != null ? eq(actions.serviceCode, criteria.serviceCode) : undefined,
    criteria.kind != null ? eq(actions.kind, criteria.kind) : undefined,
    criteria.states != null ? inArray(actions.state, [...criteria.states]) : undefined,
    criteria.taskId != null ? eq(actions.taskId, criteria.taskId) : undefined,
    criteria.allowedServiceCodes !== undefined
      ? inArray(actions.serviceCode, [...criteria.allowedServiceCodes])
      : undefined,
    criteria.allowedUserName !== undefined ? ownedBy('actions', criteria.allowedUserName) : undefined,
    before !== undefined ? lt(actions.id, before) : undefined,
  ]
  return and(...conditions.filter((c): c is SQL => c !== undefined))
}

/** A page of the audit, newest first: at most `limit` actions older than the row `before`. */
export async function actionPage(
  db: Db,
  criteria: ActionCriteria,
  before: number | undefined,
  limit: number,
): Promise<ActionRow[]> {
  // inArray of an empty list matches nothing, as an empty scope must.
  if (criteria.allowedServiceCodes?.length === 0 || criteria.states?.length === 0) return []
  return db.select().from(actions).where(where(criteria, before)).orderBy(desc(actions.id)).limit(limit)
}

/** How many actions match. */
export async function countActions(db: Db, criteria: ActionCriteria): Promise<number> {
  if (criteria.allowedServiceCodes?.length === 0 || criteria.states?.length === 0) return 0
  const [row] = await db.select({ n: count() }).from(actions).where(where(criteria))
  return row?.n ?? 0
}

/** An action as the realtime engine reads it: with who started its task, which a broadcaster's view matches by. */
export type OwnedActionRow = ActionRow & { taskAuthor?: string | null }

/** The actions with these ids (any order). */
export async function actionsByIds(db: Db, ids: readonly number[]): Promise<OwnedActionRow[]> {
  if (ids.length === 0) return []
  return db
    .select({ ...getTableColumns(actions), taskAuthor: taskAuthorOf('actions') })
    .from(actions)
    .where(inArray(actions.id, [...ids]))
}

/** The latest stop asked for each of these tasks of one service code (refused attempts left out). */
export async function latestStops(
  db: Db,
  serviceCode: string,
  taskIds: readonly string[],
): Promise<Map<string, ActionRow>> {
  if (taskIds.length === 0) return new Map()
  const rows = await db
    .selectDistinctOn([actions.taskId])
    .from(actions)
    .where(
      and(
        eq(actions.serviceCode, serviceCode),
        eq(actions.kind, 'STOP_TASK'),
        inArray(actions.taskId, [...taskIds]),
        inArray(actions.state, ['PENDING', 'SUCCEEDED', 'FAILED']),
      ),
    )
    .orderBy(actions.taskId, desc(actions.id))
  return new Map(rows.map((row) => [row.taskId as string, row]))
}

/** Whether a row matches criteria: what the realtime engine asks of each changed action. */
export function actionMatches(criteria: ActionCriteria, row: OwnedActionRow): boolean {
  if (criteria.serviceCode != null && row.serviceCode !== criteria.serviceCode) return false
  if (criteria.kind != null && row.kind !== criteria.kind) return false
  if (criteria.states != null && !criteria.states.includes(row.state)) return false
  if (criteria.taskId != null && row.taskId !== criteria.taskId) return false
  if (criteria.allowedServiceCodes !== undefined && !criteria.allowedServiceCodes.includes(row.serviceCode))
    return false
  const owner = criteria.allowedUserName
  if (owner !== undefined && row.userName !== owner && row.taskAuthor !== owner) return false
  return true
}

/** The action an API key (`keyScope`: its name, '' for the local user) asked for under an idempotency key. */
export async function actionByKey(db: Db, keyScope: string, idempotencyKey: string): Promise<ActionRow | undefined> {
  const [row] = await db
    .select()
    .from(actions)
    .where(and(eq(actions.keyScope, keyScope), eq(actions.idempotencyKey, idempotencyKey)))
  return row
}
