import { createHash } from 'node:crypto'
import { and, eq, ne } from 'drizzle-orm'
import type { Db } from '../database.client.js'
import { notifyStatement } from '../notify.statements.js'
import { appendWebhookEvents } from '../outbound/webhook.statements.js'
import { actions } from '../tables/action.table.js'
import { type IncidentResolution, type IncidentRow, incidents, type NewIncidentRow } from '../tables/incident.table.js'

/**
 * An incident's every change, each in one transaction with what tells it: the `incidentChanged`
 * doorbell and the webhook event. The row's change is conditional (the partial unique index for
 * an opening, the state for the others), so whichever instance or worker decided the same change
 * first is the one that tells it, once.
 */

/** Opens an incident, or resolves to undefined when one of its rule and subject is already open. */
export async function openIncident(db: Db, row: NewIncidentRow): Promise<IncidentRow | undefined> {
  return db.transaction(async (tx) => {
    const [inserted] = await tx
      .insert(incidents)
      .values({ ...row, state: 'OPEN' })
      .onConflictDoNothing()
      .returning()
    if (inserted) await tell(tx, inserted, 'incident.opened', inserted.openedAt)
    return inserted
  })
}

/** Resolves an incident not resolved yet; undefined when it already was (by another instance). */
export async function resolveIncident(
  db: Db,
  id: number,
  at: Date,
  resolution: IncidentResolution,
): Promise<IncidentRow | undefined> {
  return db.transaction(async (tx) => {
    const [row] = await tx
      .update(incidents)
      .set({ state: 'RESOLVED', resolvedAt: at, resolution })
      .where(and(eq(incidents.id, id), ne(incidents.state, 'RESOLVED')))
      .returning()
    if (row) await tell(tx, row, 'incident.resolved', at)
    return row
  })
}

/** Who acknowledges: whom the audit names (a token's `sub`, a key's name, `local`), and the key its rate is kept under. */
export interface Acknowledger {
  by: string
  keyName: string | null
  note: string | null
}

/**
 * Acknowledges an open incident, audited in the actions' table (kind ACKNOWLEDGE_INCIDENT) in the
 * same transaction. Safe to repeat: an incident already acknowledged or resolved is answered as it
 * stands, with nothing written. Undefined when no incident has this id within `allowed` codes.
 */
export async function acknowledgeIncident(
  db: Db,
  id: number,
  who: Acknowledger,
  at: Date,
  allowed: readonly string[] | undefined,
): Promise<IncidentRow | undefined> {
  return db.transaction(async (tx) => {
    const [current] = await tx.select().from(incidents).where(eq(incidents.id, id)).for('update')
    if (!current || (allowed !== undefined && !allowed.includes(current.serviceCode))) return undefined
    if (current.state !== 'OPEN') return current
    const [row] = await tx
      .update(incidents)
      .set({ state: 'ACKNOWLEDGED', acknowledgedAt: at, acknowledgedBy: who.by, note: who.note })
      .where(eq(incidents.id, id))
      .returning()
    if (!row) return undefined
    await auditAcknowledgement(tx, row, who, at, 'SUCCEEDED')
    await tell(tx, row, 'incident.acknowledged', at)
    return row
  })
}

/**
 * A refused acknowledgement (a key that may not operate), in the audit as a refused action is:
 * only of an incident the key may read, so the audit of a code never names what another tenant tried.
 */
export async function refuseAcknowledgement(
  db: Db,
  id: number,
  who: Acknowledger,
  at: Date,
  allowed: readonly string[] | undefined,
): Promise<void> {
  await db.transaction(async (tx) => {
    const [current] = await tx.select().from(incidents).where(eq(incidents.id, id))
    if (!current || (allowed !== undefined && !allowed.includes(current.serviceCode))) return
    await auditAcknowledgement(tx, current, who, at, 'REFUSED')
  })
}

async function auditAcknowledgement(
  tx: Db,
  row: Pick<IncidentRow, 'id' | 'serviceCode' | 'taskId'>,
  who: Acknowledger,
  at: Date,
  state: 'SUCCEEDED' | 'REFUSED',
): Promise<void> {
  const [audit] = await tx
    .insert(actions)
    .values({
      kind: 'ACKNOWLEDGE_INCIDENT',
      serviceCode: row.serviceCode,
      taskId: row.taskId,
      requestedBy: who.by,
      reason: who.note,
      argsHash: createHash('sha256')
        .update(JSON.stringify(['ACKNOWLEDGE_INCIDENT', row.id, who.note]))
        .digest('hex'),
      keyScope: who.keyName ?? '',
      state,
      refusal: state === 'REFUSED' ? 'FORBIDDEN' : null,
      message:
        state === 'REFUSED'
          ? 'FORBIDDEN: acknowledging an incident needs an API key with "can": ["operate"].'
          : `incident ${row.id}`,
      requestedAt: at,
      finishedAt: at,
    })
    .returning({ id: actions.id })
  const notify = audit ? notifyStatement([{ kind: 'action', id: audit.id }]) : undefined
  if (notify) await tx.execute(notify)
}

type IncidentEvent = 'incident.opened' | 'incident.acknowledged' | 'incident.resolved'

async function tell(tx: Db, row: IncidentRow, type: IncidentEvent, at: Date): Promise<void> {
  const notify = notifyStatement([{ kind: 'incident', id: row.id }])
  if (notify) await tx.execute(notify)
  await appendWebhookEvents(tx, [
    { type, serviceCode: row.serviceCode, taskId: row.taskId, occurredAt: at, facts: { incident: incidentFacts(row) } },
  ])
}

/** An incident in the schema's own names, for a webhook body (`incidentId` becomes its global `id`). */
export function incidentFacts(row: IncidentRow): Record<string, unknown> {
  return {
    incidentId: row.id,
    rule: row.rule,
    severity: row.severity,
    state: row.state,
    summary: row.summary,
    value: row.value,
    threshold: row.threshold,
    startedAt: row.startedAt.toISOString(),
    openedAt: row.openedAt.toISOString(),
    acknowledgedAt: row.acknowledgedAt?.toISOString() ?? null,
    acknowledgedBy: row.acknowledgedBy,
    note: row.note,
    resolvedAt: row.resolvedAt?.toISOString() ?? null,
    resolution: row.resolution,
  }
}
