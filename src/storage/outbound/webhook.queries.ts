import { and, desc, eq, inArray, lt, sql } from 'drizzle-orm'
import { type Db, resultRows } from '../database.client.js'
import {
  type DeliveryStatus,
  webhookDeliveries,
  webhookEndpoints,
  type WebhookDeliveryRow,
  type WebhookEndpointRow,
} from '../tables/webhook.table.js'

/** An endpoint's stored state with what waits for it. */
export interface EndpointStateRow extends WebhookEndpointRow {
  /** Deliveries in line (PENDING or RETRYING). */
  pending: number
  deadLetters: number
}

/** The stored state of these endpoints, with their pending and dead counts, in one statement each. */
export async function endpointStates(db: Db, names: readonly string[]): Promise<Map<string, EndpointStateRow>> {
  const states = new Map<string, EndpointStateRow>()
  if (names.length === 0) return states
  const rows = await db
    .select()
    .from(webhookEndpoints)
    .where(inArray(webhookEndpoints.name, [...names]))
  const counts = resultRows<{ endpoint: string; pending: string; dead: string }>(
    await db.execute(sql`select endpoint,
        count(*) filter (where status in ('PENDING', 'RETRYING')) as pending,
        count(*) filter (where status = 'DEAD') as dead
      from webhook_deliveries
      where endpoint in ${sql`(${sql.join(
        names.map((name) => sql`${name}`),
        sql`, `,
      )})`} and status in ('PENDING', 'RETRYING', 'DEAD')
      group by endpoint`),
  )
  const byName = new Map(counts.map((row) => [row.endpoint, row]))
  for (const row of rows) {
    const count = byName.get(row.name)
    states.set(row.name, { ...row, pending: Number(count?.pending ?? 0), deadLetters: Number(count?.dead ?? 0) })
  }
  return states
}

/** Whether each of these endpoints is switched on, by name (one without a row yet is on). */
export async function endpointsEnabled(db: Db, names: readonly string[]): Promise<Map<string, boolean>> {
  if (names.length === 0) return new Map()
  const rows = await db
    .select({ name: webhookEndpoints.name, enabled: webhookEndpoints.enabled })
    .from(webhookEndpoints)
    .where(inArray(webhookEndpoints.name, [...names]))
  return new Map(rows.map((row) => [row.name, row.enabled]))
}

/** One page of an endpoint's deliveries, newest first, before a row id. */
export async function deliveryPage(
  db: Db,
  endpoint: string,
  page: { status?: DeliveryStatus | undefined; beforeId?: number | undefined; limit: number },
): Promise<WebhookDeliveryRow[]> {
  const conditions = [eq(webhookDeliveries.endpoint, endpoint)]
  if (page.status) conditions.push(eq(webhookDeliveries.status, page.status))
  if (page.beforeId !== undefined) conditions.push(lt(webhookDeliveries.id, page.beforeId))
  return db
    .select()
    .from(webhookDeliveries)
    .where(and(...conditions))
    .orderBy(desc(webhookDeliveries.id))
    .limit(page.limit)
}

/** How many deliveries an endpoint has, of one status or all. */
export async function countDeliveries(db: Db, endpoint: string, status?: DeliveryStatus): Promise<number> {
  const conditions = [eq(webhookDeliveries.endpoint, endpoint)]
  if (status) conditions.push(eq(webhookDeliveries.status, status))
  const [row] = await db
    .select({ count: sql<number>`count(*)::int` })
    .from(webhookDeliveries)
    .where(and(...conditions))
  return Number(row?.count ?? 0)
}
