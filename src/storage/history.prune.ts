import { sql } from 'drizzle-orm'
import { type Db, resultRows } from './database.client.js'
import { dropSamplePartitions } from './sample.partitions.js'

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
    sql`delete from task_live where at < ${hour}::timestamptz and not listed and start_checked and end_checked returning 1`,
  ]) {
    rollupRows += resultRows(await db.execute(statement)).length
  }
  return { partitions, rollupRows }
}
