import { and, eq, inArray, type SQL, sql } from 'drizzle-orm'
import type { LogPosition } from '../../model/log.position.js'
import { type Db, resultRows } from '../database.client.js'
import { jsonLiteral } from '../tables/json.rows.js'
import { afterIn, finalIn, finalPrefix, type LogRead } from '../log.kernel.js'
import { webhookDeliveries, webhookEndpoints, webhookEvents, type WebhookEventRow } from '../tables/webhook.table.js'

/**
 * Takes the enqueuer's lock until the transaction ends: one enqueuer at a time across every
 * instance, so the checkpoint moves once per event. The commit is asynchronous for the same
 * reason as the projector's: the deliveries and the checkpoint are lost or kept together.
 */
export async function tryEnqueueLock(tx: Db): Promise<boolean> {
  const [row] = resultRows<{ locked: boolean }>(
    await tx.execute(
      sql`select pg_try_advisory_xact_lock(hashtextextended('livegate:webhooks', 0)) as locked,
        set_config('synchronous_commit', 'off', true)`,
    ),
  )
  return row?.locked === true
}

/** A derived event to append, in the transaction of the change it tells of. */
export type NewWebhookEvent = Pick<WebhookEventRow, 'type' | 'serviceCode' | 'taskId' | 'occurredAt' | 'facts'>

/** Appends derived events; nothing when the list is empty. */
export async function appendWebhookEvents(tx: Db, events: readonly NewWebhookEvent[]): Promise<void> {
  if (events.length === 0) return
  await tx.insert(webhookEvents).values([...events])
}

/** Derived events after a position, oldest first, up to the first that is not final yet. */
export async function webhookEventsAfter(
  tx: Db,
  position: LogPosition,
  limit: number,
): Promise<LogRead<WebhookEventRow & { final: boolean }>> {
  const rows = await tx
    .select({
      id: webhookEvents.id,
      xid: webhookEvents.xid,
      type: webhookEvents.type,
      serviceCode: webhookEvents.serviceCode,
      taskId: webhookEvents.taskId,
      occurredAt: webhookEvents.occurredAt,
      facts: webhookEvents.facts,
      final: sql<boolean>`${finalIn(webhookEvents)}`,
    })
    .from(webhookEvents)
    .where(afterIn(webhookEvents, position))
    .orderBy(webhookEvents.xid, webhookEvents.id)
    .limit(limit)
  return finalPrefix(rows)
}

/** The position of the newest derived event, final or not: where an enqueuer that never ran starts. */
export async function webhookEventsEnd(db: Db): Promise<LogPosition> {
  const [row] = resultRows<{ xid: string; id: string }>(
    await db.execute(sql`select xid::text as xid, id from webhook_events order by xid desc, id desc limit 1`),
  )
  return row ? { xid: row.xid, id: Number(row.id) } : { xid: '0', id: 0 }
}

/** A delivery to put in line. */
export interface NewDelivery {
  endpoint: string
  eventId: string
  eventType: string
  serviceCode: string
  body: string
  /** PENDING; DEAD when the endpoint is switched off (kept as a dead letter). */
  status: 'PENDING' | 'DEAD'
}

/** Puts deliveries in line; one already there (the same event to the same endpoint) is left alone. */
export async function insertDeliveries(tx: Db, rows: readonly NewDelivery[]): Promise<void> {
  if (rows.length === 0) return
  // One JSON literal rather than a placeholder per value (see json.rows.ts).
  await tx.execute(sql`insert into webhook_deliveries (endpoint, event_id, event_type, service_code, body, status,
    next_attempt_at, created_at, finished_at)
    select r.endpoint, r.event_id, r.event_type, r.service_code, r.body, r.status, now(), now(), case when r.status =
      'DEAD' then now() end
    from jsonb_to_recordset(${jsonLiteral(rows.map(outboxRecord))})
      as r(endpoint text, event_id text, event_type text, service_code text, body text, status text)
    on conflict (endpoint, event_id) do nothing`)
}

/** Makes sure every configured endpoint has its state row; a new one receives events from now on. */
export async function ensureEndpoints(db: Db, names: readonly string[]): Promise<void> {
  if (names.length === 0) return
  await db
    .insert(webhookEndpoints)
    .values(names.map((name) => ({ name })))
    .onConflictDoNothing()
}

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

/** Notes a delivered attempt on the endpoint: it is no longer failing. */
export async function endpointSucceeded(db: Db, name: string): Promise<void> {
  await db
    .update(webhookEndpoints)
    .set({ lastSuccessAt: sql`now()`, failingSince: null })
    .where(eq(webhookEndpoints.name, name))
}

/**
 * Notes a failed attempt on the endpoint, and switches it off when every attempt has failed for
 * `disableAfterMs`. Resolves to whether this call switched it off.
 */
export async function endpointFailed(db: Db, name: string, error: string, disableAfterMs: number): Promise<boolean> {
  const [row] = resultRows<{ disable: boolean }>(
    await db.execute(sql`update webhook_endpoints
      set last_failure_at = now(), last_error = ${error}, failing_since = coalesce(failing_since, now())
      where name = ${name}
      returning enabled and coalesce(failing_since, now()) <= now() - make_interval(secs => ${disableAfterMs / 1000})
        as disable`),
  )
  if (!row?.disable) return false
  return disableEndpoint(db, name, `every attempt failed for ${Math.round(disableAfterMs / 3_600_000)} h or more`)
}

/**
 * Switches an endpoint off: what waits for it becomes dead letters (replayable once it is on
 * again). Resolves to whether it was on.
 */
export async function disableEndpoint(db: Db, name: string, reason: string): Promise<boolean> {
  return db.transaction(async (tx) => {
    const rows = await tx
      .update(webhookEndpoints)
      .set({ enabled: false, disabledReason: reason })
      .where(and(eq(webhookEndpoints.name, name), eq(webhookEndpoints.enabled, true)))
      .returning({ name: webhookEndpoints.name })
    await tx
      .update(webhookDeliveries)
      .set({
        status: 'DEAD',
        finishedAt: sql`now()`,
        lockedUntil: null,
        owner: null,
        lastError: sql`coalesce(${webhookDeliveries.lastError}, ${`endpoint switched off: ${reason}`})`,
      })
      .where(and(eq(webhookDeliveries.endpoint, name), inArray(webhookDeliveries.status, ['PENDING', 'RETRYING'])))
    return rows.length === 1
  })
}

/** Switches an endpoint on again; its failure streak starts afresh. */
export async function enableEndpoint(db: Db, name: string): Promise<void> {
  await db
    .update(webhookEndpoints)
    .set({ enabled: true, disabledReason: null, failingSince: null })
    .where(eq(webhookEndpoints.name, name))
}

/** What {@link redeliver} did: how many it put back in line, or that the endpoint is off. */
export type Redelivered = { count: number } | { disabled: true }

/**
 * Puts dead letters and delivered events of an endpoint back in line: those with these event
 * ids, or created since a time (both: either), at most `limit` of them. An endpoint that is off
 * gets none: its worker makes no attempts, so the rows would wait PENDING where retention never
 * reaches. The endpoint's row is read FOR SHARE, so a switch-off committing meanwhile (which turns
 * what waits into dead letters) is seen before any row is put back.
 */
export async function redeliver(
  db: Db,
  endpoint: string,
  which: { eventIds?: readonly string[] | undefined; since?: Date | undefined },
  limit: number,
): Promise<Redelivered> {
  const chosen: SQL[] = []
  if (which.eventIds)
    chosen.push(which.eventIds.length > 0 ? inArray(webhookDeliveries.eventId, [...which.eventIds]) : sql`false`)
  if (which.since) chosen.push(sql`${webhookDeliveries.createdAt} >= ${which.since.toISOString()}::timestamptz`)
  if (chosen.length === 0) chosen.push(sql`${webhookDeliveries.status} = 'DEAD'`)
  return db.transaction(async (tx) => {
    const [state] = resultRows<{ enabled: boolean }>(
      await tx.execute(sql`select enabled from webhook_endpoints where name = ${endpoint} for share`),
    )
    if (state && !state.enabled) return { disabled: true as const }
    const batch = tx
      .select({ id: webhookDeliveries.id })
      .from(webhookDeliveries)
      .where(
        and(
          eq(webhookDeliveries.endpoint, endpoint),
          inArray(webhookDeliveries.status, ['DEAD', 'DELIVERED']),
          sql`(${sql.join(chosen, sql` or `)})`,
        ),
      )
      .limit(limit)
      .for('update', { skipLocked: true })
    const rows = await tx
      .update(webhookDeliveries)
      .set({
        status: 'PENDING',
        attempts: 0,
        nextAttemptAt: sql`now()`,
        finishedAt: null,
        deliveredAt: null,
        lockedUntil: null,
        owner: null,
      })
      .where(inArray(webhookDeliveries.id, batch))
      .returning({ id: webhookDeliveries.id })
    return { count: rows.length }
  })
}

/**
 * Deletes up to `limit` finished deliveries (delivered before `deliveredCutoff`, dead before
 * `deadCutoff`) and derived events older than `deadCutoff`; resolves to how many deliveries went.
 */
export async function pruneWebhooks(db: Db, deliveredCutoff: Date, deadCutoff: Date, limit: number): Promise<number> {
  const rows = resultRows(
    await db.execute(sql`delete from webhook_deliveries where id in (
      select id from webhook_deliveries
      where finished_at is not null and (
        (status = 'DELIVERED' and finished_at < ${deliveredCutoff.toISOString()}::timestamptz)
        or (status = 'DEAD' and finished_at < ${deadCutoff.toISOString()}::timestamptz))
      limit ${limit} for update skip locked) returning id`),
  )
  await db.execute(
    sql`delete from webhook_events where id in (select id from webhook_events where occurred_at <
      ${deadCutoff.toISOString()}::timestamptz limit ${limit} for update skip locked)`,
  )
  return rows.length
}

function outboxRecord(row: NewDelivery) {
  const { endpoint, eventId, eventType, serviceCode, body, status } = row
  return { endpoint, event_id: eventId, event_type: eventType, service_code: serviceCode, body, status }
}
