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

/** An event to put in line for the endpoints that want it, its body once for all of them. */
export interface NewDelivery {
  eventId: string
  eventType: string
  serviceCode: string
  body: string
  /** Each endpoint's name and its row's status: PENDING; DEAD when it is switched off (a dead letter). */
  to: ReadonlyArray<{ endpoint: string; status: 'PENDING' | 'DEAD' }>
}

/**
 * Puts deliveries in line, a row per event and endpoint, in one statement whose text carries each
 * body once (PostgreSQL fans it out): three endpoints do not triple what Node writes and the server
 * parses. One already there (the same event to the same endpoint) is left alone.
 */
export async function insertDeliveries(tx: Db, events: readonly NewDelivery[]): Promise<number> {
  const count = events.reduce((n, event) => n + event.to.length, 0)
  if (count === 0) return 0
  // One JSON literal rather than a placeholder per value (see json.rows.ts).
  await tx.execute(sql`insert into webhook_deliveries
      (endpoint, event_id, event_type, service_code, body, status, next_attempt_at, created_at, finished_at)
    select t.endpoint, r."eventId", r."eventType", r."serviceCode", r.body, t.status, now(), now(),
      case when t.status = 'DEAD' then now() end
    from jsonb_to_recordset(${jsonLiteral(events)})
      as r("eventId" text, "eventType" text, "serviceCode" text, body text, "to" jsonb),
      jsonb_to_recordset(r."to") as t(endpoint text, status text)
    on conflict (endpoint, event_id) do nothing`)
  return count
}

/** Makes sure every configured endpoint has its state row; a new one receives events from now on. */
export async function ensureEndpoints(db: Db, names: readonly string[]): Promise<void> {
  if (names.length === 0) return
  await db
    .insert(webhookEndpoints)
    .values(names.map((name) => ({ name })))
    .onConflictDoNothing()
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
