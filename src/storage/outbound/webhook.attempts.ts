import { sql } from 'drizzle-orm'
import { type Db, resultRows } from '../database.client.js'
import { jsonLiteral } from '../tables/json.rows.js'

// A delivery's attempts in the outbox: claimed a batch at a time under a lease, handed back, and
// their outcomes stored a batch at a time (the rows are put in line by webhook.statements.ts).

/** A delivery claimed for one attempt. */
export interface ClaimedDelivery {
  id: number
  eventId: string
  body: string
  /** This attempt's number, 1 for the first. */
  attempts: number
  createdAt: Date
  /** When this process claimed it (its own clock), to know how long its lease lasts. */
  claimedAt: number
}

/**
 * Claims up to `limit` due deliveries of an enabled endpoint for one attempt each, under a lease
 * of `leaseMs`: rows another process holds are skipped (SKIP LOCKED), and a lease that ran out
 * (its process was killed) is taken over.
 */
export async function claimDeliveries(
  db: Db,
  endpoint: string,
  owner: string,
  leaseMs: number,
  limit: number,
): Promise<ClaimedDelivery[]> {
  const rows = resultRows<{ id: string; event_id: string; body: string; attempts: number; created_at: string | Date }>(
    await db.execute(sql`update webhook_deliveries d
      set locked_until = now() + make_interval(secs => ${leaseMs / 1000}), owner = ${owner}, attempts = d.attempts + 1
      from (
        select id from webhook_deliveries
        where endpoint = ${endpoint} and status in ('PENDING', 'RETRYING') and next_attempt_at <= now()
          and (locked_until is null or locked_until < now())
          and exists (select 1 from webhook_endpoints e where e.name = ${endpoint} and e.enabled)
        order by next_attempt_at, id
        limit ${limit}
        for update skip locked
      ) due
      where d.id = due.id
      returning d.id, d.event_id, d.body, d.attempts, d.created_at`),
  )
  const claimedAt = Date.now()
  return rows.map((row) => ({
    id: Number(row.id),
    eventId: row.event_id,
    body: row.body,
    attempts: row.attempts,
    createdAt: new Date(row.created_at),
    claimedAt,
  }))
}

/**
 * Hands claims back untried (a stopping worker's claimed-ahead rows): the attempt the claim counted
 * is taken back, and the row is due again at once for whichever process looks.
 */
export async function releaseClaims(db: Db, owner: string, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return
  await db.execute(sql`update webhook_deliveries set locked_until = null, owner = null, attempts = attempts - 1
    where id = any(${`{${ids.join(',')}}`}::bigint[]) and owner = ${owner}`)
}

/** How one attempt ended, as stored. */
export type AttemptOutcome =
  | { kind: 'delivered'; statusCode: number }
  | { kind: 'retry'; statusCode: number | null; error: string; delayMs: number }
  | { kind: 'dead'; statusCode: number | null; error: string }

/**
 * Records attempts' outcomes in one statement, for those `owner` still holds (a process that
 * outlived its lease does not overwrite the one that took it over). Resolves to the ids recorded.
 */
export async function recordAttempts(
  db: Db,
  owner: string,
  outcomes: ReadonlyArray<{ id: number; outcome: AttemptOutcome }>,
): Promise<Set<number>> {
  if (outcomes.length === 0) return new Set()
  const rows = outcomes.map(({ id, outcome }) => ({
    id,
    status: outcome.kind === 'delivered' ? 'DELIVERED' : outcome.kind === 'retry' ? 'RETRYING' : 'DEAD',
    code: outcome.statusCode,
    error: outcome.kind === 'delivered' ? null : outcome.error,
    delay_ms: outcome.kind === 'retry' ? outcome.delayMs : 0,
  }))
  const recorded = resultRows<{ id: string }>(
    await db.execute(sql`update webhook_deliveries d
      set status = r.status, last_status_code = r.code, last_error = r.error, locked_until = null, owner = null,
        next_attempt_at = case when r.status = 'RETRYING' then now() + r.delay_ms * interval '1 millisecond' else
          d.next_attempt_at end,
        delivered_at = case when r.status = 'DELIVERED' then now() else d.delivered_at end,
        finished_at = case when r.status in ('DELIVERED', 'DEAD') then now() else d.finished_at end
      from jsonb_to_recordset(${jsonLiteral(rows)}) as r(id bigint, status text, code int, error text, delay_ms double
        precision)
      where d.id = r.id and d.owner = ${owner}
      returning d.id`),
  )
  return new Set(recorded.map((row) => Number(row.id)))
}
