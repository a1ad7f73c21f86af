import { type SQL, sql } from 'drizzle-orm'
import { encodeEvent, eventChannel, type RealtimeEvent } from '../model/event.codec.js'
import { HEARTBEAT_CHANNEL } from '../model/notify.channels.js'
import type { Db } from './database.client.js'
import { jsonLiteral } from './tables/json.rows.js'

/**
 * One statement that NOTIFYs every event on its own channel (`eventChannel`), to run inside the
 * transaction that made them: the database delivers them only if it commits, and in commit order.
 * Heard by the realtime engine (`work/realtime/realtime.engine.ts`) and the alert watch.
 */
export function notifyStatement(events: readonly RealtimeEvent[]): SQL | undefined {
  const notes: Array<[string, string]> = []
  for (const event of events) {
    const payload = encodeEvent(event)
    if (payload !== undefined) notes.push([eventChannel(event), payload])
  }
  if (notes.length === 0) return undefined
  // The notes in one literal: no placeholder per event, and no parameter at all (see jsonLiteral).
  return sql`select pg_notify(v->>0, v->>1) from
    jsonb_array_elements(${jsonLiteral(notes)}) with ordinality as e(v, n) order by n`
}

/** One NOTIFY of one payload on a channel of its own, to run inside the transaction it tells of. */
export function notifyOnChannel(channel: string, payload: string): SQL {
  return sql`select pg_notify(${channel}, ${payload})`
}

/** A probe on the heartbeat channel, which only its sender looks for: whether its listener still hears. */
export async function sendProbe(db: Db, payload: string): Promise<void> {
  await db.execute(notifyOnChannel(HEARTBEAT_CHANNEL, payload))
}
