import { sql } from 'drizzle-orm'
import { type Db, resultRows } from './database.client.js'

/** The tables retention prunes. */
export type PrunedTable = 'callbacks' | 'refusals'

/**
 * Deletes up to `limit` rows received before `cutoff`; resolves to how many went. SKIP LOCKED
 * leaves rows another prune holds. Callbacks are found oldest first along the log's position
 * index (received_at has no index of its own: nothing else reads by it), and only those the
 * graph projection has folded go, so pruning never takes evidence the graph has not seen.
 */
export async function pruneBatch(db: Db, table: PrunedTable, cutoff: Date, limit: number): Promise<number> {
  const at = cutoff.toISOString()
  const statement =
    table === 'callbacks'
      ? sql`delete from callbacks where id in (
          select c.id from callbacks c
          where c.received_at < ${at}::timestamptz
            and (c.xid, c.id) <= (select p.xid, p.id from projections p where p.name = 'graph')
          order by c.xid, c.id limit ${limit} for update skip locked
        ) returning id`
      : sql`delete from refusals where id in (
          select id from refusals where received_at < ${at}::timestamptz limit ${limit} for update skip locked
        ) returning id`
  return resultRows(await db.execute(statement)).length
}
