import { and, eq, gt, lt, sql } from 'drizzle-orm'
import type { Db } from '../database.client.js'
import { resultRows } from '../database.client.js'
import { type ActionRow, actions, type NewActionRow } from '../tables/action.table.js'
import { notifyStatement } from '../notify.statements.js'
import { appendWebhookEvents } from './webhook.statements.js'

/** What {@link recordAction} found: a new row, or the row an earlier request with the same idempotency key made. */
export type Recorded = { fresh: true; row: ActionRow } | { fresh: false; row: ActionRow }

/**
 * Records an action (or a refused attempt) and announces it (`actionChanged`), in one
 * transaction. With an idempotency key, an earlier row of the same key younger than `reuseAfter`
 * is answered instead of a new one; an older one gives the key up (its row stays, without it).
 * Requests under one key take turns on a lock of the key, whichever process they reached, so a
 * repeat finds its original before `admit` is asked: `admit` (the rate) is asked only for what
 * will be a new row, inside the turn, and a request it refuses writes nothing (undefined).
 */
export async function recordAction(db: Db, row: NewActionRow, reuseAfter: Date): Promise<Recorded>
export async function recordAction(
  db: Db,
  row: NewActionRow,
  reuseAfter: Date,
  admit: (tx: Db) => Promise<boolean>,
): Promise<Recorded | undefined>
export async function recordAction(
  db: Db,
  row: NewActionRow,
  reuseAfter: Date,
  admit: (tx: Db) => Promise<boolean> = async () => true,
): Promise<Recorded | undefined> {
  return db.transaction(async (tx) => {
    if (row.idempotencyKey) {
      await tx.execute(
        sql`select pg_advisory_xact_lock(hashtext(${`livegate:action-key:${row.keyScope}`}), hashtext(${row.idempotencyKey}))`,
      )
      const sameKey = and(eq(actions.keyScope, row.keyScope), eq(actions.idempotencyKey, row.idempotencyKey))
      const [earlier] = await tx.select().from(actions).where(sameKey)
      if (earlier && earlier.requestedAt >= reuseAfter) return { fresh: false, row: earlier }
      if (!(await admit(tx))) return undefined
      if (earlier)
        await tx
          .update(actions)
          .set({ idempotencyKey: null })
          .where(and(sameKey, lt(actions.requestedAt, reuseAfter)))
    } else if (!(await admit(tx))) return undefined
    const [inserted] = await tx.insert(actions).values(row).onConflictDoNothing().returning()
    if (!inserted) {
      const [earlier] = await tx
        .select()
        .from(actions)
        .where(and(eq(actions.keyScope, row.keyScope), eq(actions.idempotencyKey, row.idempotencyKey ?? '')))
      if (!earlier) throw new Error('an action with this idempotency key vanished while it was recorded')
      return { fresh: false, row: earlier }
    }
    await announce(tx, inserted.id)
    return { fresh: true, row: inserted }
  })
}

/**
 * What the audit holds of a key's window: the slots taken (every row of the key but the
 * RATE_LIMITED refusals, which take none), the newest of them, and the newest RATE_LIMITED refusal.
 */
export interface KeyWindow {
  taken: number
  lastTakenAt: Date | null
  lastRefusedAt: Date | null
}

/**
 * Takes the key's turn for its rate (until `tx` ends) and reads its window since `since`. The rate
 * is the audit's, not a process's: every request of a key, on whichever worker or instance, waits
 * for the one before it to commit its row, so `serve --workers N` allows the key's rate, not N
 * times it. A transaction-scoped lock, as PgBouncer's transaction mode allows.
 */
export async function keyWindow(tx: Db, keyScope: string, since: Date): Promise<KeyWindow> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext('livegate:action-rate'), hashtext(${keyScope}))`)
  const takes = sql`${actions.refusal} is distinct from 'RATE_LIMITED'`
  const [window] = await tx
    .select({
      taken: sql<number>`count(*) filter (where ${takes})`.mapWith(Number),
      lastTakenAt: sql<Date | null>`max(${actions.requestedAt}) filter (where ${takes})`.mapWith(asDate),
      lastRefusedAt: sql<Date | null>`max(${actions.requestedAt}) filter (where not ${takes})`.mapWith(asDate),
    })
    .from(actions)
    .where(and(eq(actions.keyScope, keyScope), gt(actions.requestedAt, since)))
  return window ?? { taken: 0, lastTakenAt: null, lastRefusedAt: null }
}

function asDate(value: unknown): Date | null {
  return value === null || value === undefined ? null : new Date(value as string | Date)
}

/** What an action's end writes. */
export interface ActionOutcome {
  state: 'SUCCEEDED' | 'FAILED'
  ret: number | null
  message: string | null
  attempts: number
  finishedAt: Date
}

/**
 * Writes how an action ended, once: a row already ended is left as it is. `alsoInTransaction`
 * runs in the same transaction (the stop's evidence for the graph), so the audit and the graph
 * never disagree about a stop.
 */
export async function finishAction(
  db: Db,
  id: number,
  outcome: ActionOutcome,
  alsoInTransaction?: (tx: Db) => Promise<unknown>,
): Promise<ActionRow | undefined> {
  return db.transaction(async (tx) => {
    const [row] = await tx
      .update(actions)
      .set(outcome)
      .where(and(eq(actions.id, id), eq(actions.state, 'PENDING')))
      .returning()
    if (!row) return undefined
    if (alsoInTransaction) await alsoInTransaction(tx)
    await announce(tx, id)
    await tellWebhooks(tx, [row])
    return row
  })
}

/**
 * Ends the actions still PENDING that were asked for before `before`: their process stopped
 * before it could record the cloud's answer. Resolves to how many.
 */
export async function abandonPending(db: Db, before: Date, finishedAt: Date): Promise<number> {
  return db.transaction(async (tx) => {
    const rows = await tx
      .update(actions)
      .set({
        state: 'FAILED',
        finishedAt,
        message: sql`case when ${actions.kind} in ('STOP_TASK', 'SEND_MESSAGE') then
          'livegate stopped before the cloud''s answer was recorded; the cloud may have acted.' else
          'livegate stopped before this action''s end was recorded; it may have taken effect.' end`,
      })
      .where(and(eq(actions.state, 'PENDING'), lt(actions.requestedAt, before)))
      .returning()
    for (const row of rows) await announce(tx, row.id)
    await tellWebhooks(tx, rows)
    return rows.length
  })
}

/** Deletes up to `limit` actions asked for before `cutoff`; resolves to how many went. */
export async function pruneActions(db: Db, cutoff: Date, limit: number): Promise<number> {
  const statement = sql`delete from actions where id in (
    select id from actions where requested_at < ${cutoff.toISOString()}::timestamptz limit ${limit} for update skip
      locked
  ) returning id`
  return resultRows(await db.execute(statement)).length
}

async function announce(tx: Db, id: number): Promise<void> {
  const notify = notifyStatement([{ kind: 'action', id }])
  if (notify) await tx.execute(notify)
}

/**
 * An action that ended is an event for the webhooks too (`action.succeeded`, `action.failed`),
 * written in the transaction that ends it: the outbox and the audit never disagree. What the
 * message said is never in it, as it is never in the log lines.
 */
async function tellWebhooks(tx: Db, rows: readonly ActionRow[]): Promise<void> {
  // Only the cloud's actions are events of the webhook contract; a replay or a switch of an
  // endpoint stays in the audit (an endpoint would otherwise be told of its own replays).
  const ended = rows.filter(
    (row) =>
      (row.kind === 'STOP_TASK' || row.kind === 'SEND_MESSAGE') &&
      (row.state === 'SUCCEEDED' || row.state === 'FAILED'),
  )
  if (ended.length === 0) return
  await appendWebhookEvents(
    tx,
    ended.map((row) => ({
      type: row.state === 'SUCCEEDED' ? 'action.succeeded' : 'action.failed',
      serviceCode: row.serviceCode,
      taskId: row.taskId,
      occurredAt: row.finishedAt ?? new Date(),
      facts: {
        action: {
          actionId: row.id,
          kind: row.kind,
          userName: row.userName,
          requestedBy: row.requestedBy,
          reason: row.reason,
          state: row.state,
          ret: row.ret,
          message: row.message,
          requestedAt: row.requestedAt.toISOString(),
          finishedAt: row.finishedAt?.toISOString() ?? null,
        },
      },
    })),
  )
}
