import { inArray, sql } from 'drizzle-orm'
import type { Db } from '../database.client.js'
import { type ArchiveStatusRow, archiveStatus } from '../tables/recording.table.js'

/** How one `list_files` poll ended. */
export type ArchivePoll =
  | { ok: true; at: Date; fileCount: number; note?: { kind: string; message: string } }
  | { ok: false; at: Date; kind: string; message: string; ret: number | null; consecutiveFailures: number }

/**
 * Records a `list_files` poll of a service code, shared by every instance: a success keeps the
 * last error (it says what went wrong last time), a failure keeps the last success. A success
 * with a `note` (files or values left out) is the last error too, at the same time: still healthy. A late write
 * of an older poll (a lease that changed hands mid-poll) never overwrites a newer one.
 */
export async function recordArchivePoll(db: Db, serviceCode: string, poll: ArchivePoll): Promise<void> {
  const values: Partial<typeof archiveStatus.$inferInsert> = poll.ok
    ? {
        lastPollAt: poll.at,
        lastSuccessAt: poll.at,
        fileCount: poll.fileCount,
        consecutiveFailures: 0,
        ...(poll.note
          ? { lastErrorAt: poll.at, lastErrorKind: poll.note.kind, lastErrorMessage: poll.note.message, lastRet: null }
          : {}),
      }
    : {
        lastPollAt: poll.at,
        lastErrorAt: poll.at,
        lastErrorKind: poll.kind,
        lastErrorMessage: poll.message,
        lastRet: poll.ret,
        consecutiveFailures: poll.consecutiveFailures,
      }
  await db
    .insert(archiveStatus)
    .values({ serviceCode, ...values })
    .onConflictDoUpdate({
      target: archiveStatus.serviceCode,
      set: values,
      setWhere: sql`${archiveStatus.lastPollAt} is null or ${archiveStatus.lastPollAt} <= excluded.last_poll_at`,
    })
}

/** The stored archive status of these service codes, by code; codes never polled are absent. */
export async function readArchiveStatus(
  db: Db,
  serviceCodes: readonly string[],
): Promise<Map<string, ArchiveStatusRow>> {
  if (serviceCodes.length === 0) return new Map()
  const rows = await db
    .select()
    .from(archiveStatus)
    .where(inArray(archiveStatus.serviceCode, [...serviceCodes]))
  return new Map(rows.map((row) => [row.serviceCode, row]))
}
