import { type SQL, sql } from 'drizzle-orm'
import { encodeEvent, type RealtimeEvent } from '../model/event.codec.js'
import { EVENT_CHANNEL } from '../model/notify.channels.js'
import type { Db } from './database.client.js'
import { jsonLiteral } from './tables/json.rows.js'

/**
 * One statement that NOTIFYs every event, to run inside the transaction that made them: the
 * database delivers them only if it commits, and in commit order.
 */
export function notifyStatement(events: readonly RealtimeEvent[]): SQL | undefined {
  const payloads = events.map(encodeEvent).filter((payload): payload is string => payload !== undefined)
  if (payloads.length === 0) return undefined
  // The payloads in one literal: no placeholder per event, and no parameter at all (see jsonLiteral).
  return sql`select pg_notify(${sql.raw(`'${EVENT_CHANNEL}'`)}, p) from
    jsonb_array_elements_text(${jsonLiteral(payloads)}) with ordinality as v(p, n) order by n`
}

/** One NOTIFY of one payload on a channel of its own, to run inside the transaction it tells of. */
export function notifyOnChannel(channel: string, payload: string): SQL {
  return sql`select pg_notify(${channel}, ${payload})`
}

/** A probe on the event channel, which only its sender looks for: whether its listener still hears. */
export async function sendProbe(db: Db, payload: string): Promise<void> {
  await db.execute(sql`select pg_notify(${sql.raw(`'${EVENT_CHANNEL}'`)}, ${payload})`)
}
