import { sql } from 'drizzle-orm'
import { type Db, resultRows } from '../database.client.js'

/** How much time one partition of `task_samples` holds. */
export const PARTITION_MS = 3_600_000

const PREFIX = 'task_samples_'

/** The partition that holds samples taken at `at`: its name and bounds (UTC hours). */
export function partitionOf(at: number): { name: string; from: Date; to: Date } {
  const from = new Date(Math.floor(at / PARTITION_MS) * PARTITION_MS)
  const stamp = from.toISOString().slice(0, 13).replace(/[-T]/g, '')
  return { name: `${PREFIX}${stamp}`, from, to: new Date(from.getTime() + PARTITION_MS) }
}

function startOf(name: string): number | undefined {
  const match = /^task_samples_(\d{4})(\d{2})(\d{2})(\d{2})$/.exec(name)
  if (!match) return undefined
  const [, y, m, d, h] = match
  return Date.UTC(Number(y), Number(m) - 1, Number(d), Number(h))
}

/**
 * Creates the partitions for samples taken at `at` and in the next period, if they are not
 * there yet, in a short transaction of its own (never in the one that writes samples, which
 * would then hold the parent's lock for the whole fold). Instances that create the same partition
 * at once take turns on an advisory lock.
 */
export async function createSamplePartitions(db: Db, at: number): Promise<string[]> {
  const parts = [partitionOf(at), partitionOf(at + PARTITION_MS)]
  await db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended('task_samples partitions', 0))`)
    for (const part of parts) {
      await tx.execute(
        sql.raw(
          `create table if not exists "${part.name}" partition of task_samples for values from
            ('${part.from.toISOString()}` + `') to ('${part.to.toISOString()}')`,
        ),
      )
    }
  })
  return parts.map((part) => part.name)
}

/** Drops every partition of `task_samples` whose samples are all older than `cutoff`; resolves to their names. */
export async function dropSamplePartitions(db: Db, cutoff: number): Promise<string[]> {
  const rows = resultRows<{ name: string }>(
    await db.execute(
      sql`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent =
        'task_samples'::regclass`,
    ),
  )
  const old = rows
    .map((row) => row.name)
    .filter((name) => {
      const start = startOf(name)
      return start !== undefined && start + PARTITION_MS <= cutoff
    })
  for (const name of old) await db.execute(sql.raw(`drop table if exists "${name}"`))
  return old
}

/** How long each part of the history is kept, in milliseconds. */
export interface HistoryRetention {
  rawRetention: number
  minuteRetention: number
  hourRetention: number
}

/** What one prune removed. */
export interface HistoryPruned {
  partitions: string[]
  rollupRows: number
}

/**
 * Prunes the history as of `now`: raw samples by dropping whole partitions (never a DELETE on
 * them), rollups older than their retention, and the `task_live` rows of tasks not sampled
 * within the hour rollups' retention (their checks settled).
 */
export async function pruneHistory(db: Db, retention: HistoryRetention, now: number): Promise<HistoryPruned> {
  const partitions = await dropSamplePartitions(db, now - retention.rawRetention)
  const minute = new Date(now - retention.minuteRetention).toISOString()
  const hour = new Date(now - retention.hourRetention).toISOString()
  let rollupRows = 0
  for (const statement of [
    sql`delete from task_metrics_minute where at < ${minute}::timestamptz returning 1`,
    sql`delete from service_metrics_minute where at < ${minute}::timestamptz returning 1`,
    sql`delete from task_metrics_hour where at < ${hour}::timestamptz returning 1`,
    sql`delete from service_metrics_hour where at < ${hour}::timestamptz returning 1`,
    sql`delete from task_live where at < ${hour}::timestamptz and not listed and start_checked and end_checked
      returning 1`,
  ]) {
    rollupRows += resultRows(await db.execute(statement)).length
  }
  return { partitions, rollupRows }
}
