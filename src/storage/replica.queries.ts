import { sql } from 'drizzle-orm'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import { type Db, resultRows, tables } from './database.client.js'
import { preparing } from './prepared.client.js'

/**
 * A pool on a streaming replica, for reads. It is not asked anything at open: a replica that does
 * not answer is skipped until it does (work/replica.router.ts), and never keeps a gateway from starting.
 */
export function openReadPool(url: string, maxConnections: number): { db: Db; close(): Promise<void> } {
  const client = preparing(postgres(url, { max: maxConnections, onnotice: () => {}, connect_timeout: 2 }))
  return {
    db: drizzlePostgres({ client, schema: tables }) as unknown as Db,
    close: () => client.end({ timeout: 2 }),
  }
}

/** What a streaming replica says of its replay. */
export interface ReplayState {
  /**
   * How far its replay is behind, in milliseconds: 0 when it has replayed all it received (an
   * idle primary sends nothing, and the last replayed commit's age would only grow), else the age
   * of the last commit it replayed.
   */
  lagMs: number
  /** The WAL location it has replayed up to, as PostgreSQL writes it (`16/B374D848`). */
  replayed: string | null
}

/** Asks a replica how far its replay stands; a server that is no replica answers lag 0, replayed null. */
export async function replayState(db: Db): Promise<ReplayState> {
  const rows = resultRows<{ lag_ms: number | string | null; replayed: string | null }>(
    await db.execute(sql`select
      case when pg_last_wal_receive_lsn() is not distinct from pg_last_wal_replay_lsn() then 0
        else coalesce(extract(epoch from clock_timestamp() - pg_last_xact_replay_timestamp()) * 1000, 0)
      end as lag_ms,
      pg_last_wal_replay_lsn()::text as replayed`),
  )
  const row = rows[0]
  return { lagMs: Math.max(0, Math.round(Number(row?.lag_ms ?? 0))), replayed: row?.replayed ?? null }
}

/**
 * Where a server's data stands now, as a WAL location: a replica's replay, or the primary's WAL.
 * Asked after a read, it is at or past everything that read saw, so a later read naming it is
 * never served from older data. (COALESCE stops at the first non-null: a replica is never asked
 * pg_current_wal_lsn(), which it refuses.)
 */
export async function readPosition(db: Db): Promise<string> {
  const rows = resultRows<{ at: string }>(
    await db.execute(sql`select coalesce(pg_last_wal_replay_lsn(), pg_current_wal_lsn())::text as at`),
  )
  return rows[0]?.at ?? '0/0'
}
