import { inArray, sql } from 'drizzle-orm'
import type { CallbackRecord } from '../model/callback.record.js'
import { LOG_GREW } from '../model/event.codec.js'
import { DOORBELL_CHANNEL } from '../model/notify.channels.js'
import { callbacks } from './tables/callback.table.js'
import { type Db, resultRows } from './database.client.js'
import { upsertJson } from './tables/json.rows.js'

/** Where a kept callback landed: its row id and how many times it has been delivered. */
export interface KeptRow {
  id: number
  deliveries: number
  dedupeKey: string
}

/** A callback row to write: a record, with the deliveries of it that this write counts. */
export type CallbackWrite = CallbackRecord & { deliveries: number }

// A repeated delivery is counted, and keeps the latest delivery time (a replay may be older).
const COUNT_DELIVERY = sql.raw(
  '"deliveries" = "callbacks"."deliveries" + excluded."deliveries", "last_delivered_at" = ' +
    'greatest("callbacks"."last_delivered_at", excluded."last_delivered_at")',
)

/**
 * Appends callbacks to the log as ONE statement: it runs as its own transaction (no BEGIN, no
 * COMMIT round trip) and takes no lock but the rows' own. A delivery of a callback already kept
 * meets the unique dedupe key and is counted instead, in the same statement, so two racing
 * deliveries cannot both insert. Readers are told by {@link ringDoorbell}, not from here: a NOTIFY
 * takes a lock on the whole cluster's notification queue that its transaction holds until its
 * commit is on disk, which would line up every acknowledging commit, on every instance, behind it.
 */
export async function appendCallbacks(db: Db, rows: readonly CallbackWrite[]): Promise<KeptRow[]> {
  const upsert = upsertJson(callbacks, rows as unknown as Array<Record<string, unknown>>, {
    target: [callbacks.dedupeKey.name],
    set: COUNT_DELIVERY,
    returning: ['id', 'deliveries', 'dedupe_key'],
  })
  const result = await db.execute(upsert)
  return resultRows<{ id: number | string; deliveries: number; dedupe_key: string }>(result).map((row) => ({
    id: Number(row.id),
    deliveries: Number(row.deliveries),
    dedupeKey: row.dedupe_key,
  }))
}

/**
 * Tells every instance that the log grew. Its own transaction, committed without waiting for the
 * disk (a doorbell lost to a crash is made up for by the readers' own periodic look), so the
 * notification queue's lock is held for moments, and never by an acknowledging write. Heard on
 * the doorbell channel by the pass scheduler (`work/pass.scheduler.ts`) and the realtime engine.
 */
export async function ringDoorbell(db: Db): Promise<void> {
  await db.execute(
    sql`select set_config('synchronous_commit', 'off', true), pg_notify(${sql.raw(`'${DOORBELL_CHANNEL}'`)},
      ${sql.raw(`'${LOG_GREW}'`)})`,
  )
}

/** A callback already in the log, as a replay meets it. */
export interface LandedRow {
  id: number
  deliveries: number
  lastDeliveredAt: Date
}

/** The rows already kept under these dedupe keys. */
export async function landedByDedupeKey(db: Db, keys: readonly string[]): Promise<Map<string, LandedRow>> {
  if (keys.length === 0) return new Map()
  const rows = await db
    .select({
      id: callbacks.id,
      deliveries: callbacks.deliveries,
      lastDeliveredAt: callbacks.lastDeliveredAt,
      dedupeKey: callbacks.dedupeKey,
    })
    .from(callbacks)
    .where(inArray(callbacks.dedupeKey, [...keys]))
  return new Map(rows.map((row) => [row.dedupeKey, row]))
}
