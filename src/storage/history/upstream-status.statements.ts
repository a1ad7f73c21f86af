import { eq, inArray, sql } from 'drizzle-orm'
import type { Config } from '../../config/config.schema.js'
import type { Db } from '../database.client.js'
import { type UpstreamStatusRow, upstreamStatus } from '../tables/graph.table.js'
import { appendWebhookEvents } from '../outbound/webhook.statements.js'

/**
 * How old the last successful poll may be before a service code's stored state counts as stale:
 * three poll intervals and one request timeout. A success is due every interval plus the
 * request's own time, so one failed poll, or a lease passing to another instance (within two
 * intervals), does not yet make it stale; a second failure in a row, or a hanging request, does.
 */
export function staleAfterMs(upstream: Pick<Config['upstream'], 'pollIntervalMs' | 'timeoutMs'>): number {
  return 3 * upstream.pollIntervalMs + upstream.timeoutMs
}

/** What the stored status says of one service code's task_list, by the one rule every reader uses. */
export interface UpstreamVerdict {
  /** The latest poll succeeded. */
  healthy: boolean
  /** Polled, and no success within {@link staleAfterMs}: its tasks and users may be out of date. */
  stale: boolean
}

/**
 * The one "healthy" and "stale" rule. A code never polled successfully is unhealthy, and stale
 * when it is polled at all; `staleMs` 0 means the code is not polled, so never stale.
 */
export function judgeUpstream(
  row: Pick<UpstreamStatusRow, 'lastSuccessAt' | 'lastErrorAt'> | undefined,
  now: Date,
  staleMs: number,
): UpstreamVerdict {
  const success = row?.lastSuccessAt ?? null
  const failed = row?.lastErrorAt ?? null
  const healthy = success !== null && (failed === null || success.getTime() >= failed.getTime())
  const stale = staleMs > 0 && (success === null || now.getTime() - success.getTime() > staleMs)
  return { healthy, stale }
}

/** The stored status rows of these service codes, by code; codes never polled are absent. */
export async function readUpstreamStatus(
  db: Db,
  serviceCodes: readonly string[],
): Promise<Map<string, UpstreamStatusRow>> {
  if (serviceCodes.length === 0) return new Map()
  const rows = await db
    .select()
    .from(upstreamStatus)
    .where(inArray(upstreamStatus.serviceCode, [...serviceCodes]))
  return new Map(rows.map((row) => [row.serviceCode, row]))
}

/** A successful poll: the failure count starts over. */
export interface PollSuccess {
  at: Date
  latencyMs: number
  taskCount: number
  userCount: number
  nextPollAt: Date
}

/** A failed poll, and how many have failed in a row with it. */
export interface PollFailure {
  at: Date
  latencyMs: number
  kind: string
  message: string
  ret: number | null
  consecutiveFailures: number
  nextPollAt: Date
}

/**
 * Records a successful poll; the last error is kept (it says what went wrong last time). With
 * `staleMs`, a code that was stale until this poll is told as `upstream.recovered`, in the same
 * transaction.
 */
export async function recordPollSuccess(db: Db, serviceCode: string, poll: PollSuccess, staleMs = 0): Promise<void> {
  if (staleMs > 0) {
    await db.transaction(async (tx) => {
      const before = await lockedStatus(tx, serviceCode)
      await recordPollSuccess(tx, serviceCode, poll)
      if (before?.lastSuccessAt && judgeUpstream(before, poll.at, staleMs).stale) {
        const facts = {
          stale: false,
          lastSuccessAt: poll.at,
          staleSince: new Date(before.lastSuccessAt.getTime() + staleMs),
          consecutiveFailures: before.consecutiveFailures,
        }
        await appendWebhookEvents(tx, [
          { type: 'upstream.recovered', serviceCode, taskId: null, occurredAt: poll.at, facts },
        ])
      }
    })
    return
  }
  await upsert(db, serviceCode, {
    lastPollAt: poll.at,
    lastSuccessAt: poll.at,
    lastLatencyMs: Math.round(poll.latencyMs),
    taskCount: poll.taskCount,
    userCount: poll.userCount,
    consecutiveFailures: 0,
    nextPollAt: poll.nextPollAt,
  })
}

/**
 * Records a failed poll; the last success is kept. With `staleMs`, the failed poll after which
 * the code is stale (it was not at the poll before) is told as `upstream.stale`, in the same
 * transaction: the moment it went stale lies between two polls, so exactly one poll tells it.
 */
export async function recordPollFailure(db: Db, serviceCode: string, poll: PollFailure, staleMs = 0): Promise<void> {
  if (staleMs > 0) {
    await db.transaction(async (tx) => {
      const before = await lockedStatus(tx, serviceCode)
      await recordPollFailure(tx, serviceCode, poll)
      const lastSuccessAt = before?.lastSuccessAt ?? null
      if (!lastSuccessAt) return
      const was = judgeUpstream(before, before?.lastPollAt ?? poll.at, staleMs).stale
      const is = judgeUpstream({ lastSuccessAt, lastErrorAt: poll.at }, poll.at, staleMs).stale
      if (was || !is) return
      const facts = {
        stale: true,
        lastSuccessAt,
        consecutiveFailures: poll.consecutiveFailures,
        lastError: { kind: poll.kind, message: poll.message, ret: poll.ret },
      }
      await appendWebhookEvents(tx, [{ type: 'upstream.stale', serviceCode, taskId: null, occurredAt: poll.at, facts }])
    })
    return
  }
  await upsert(db, serviceCode, {
    lastPollAt: poll.at,
    lastErrorAt: poll.at,
    lastErrorKind: poll.kind,
    lastErrorMessage: poll.message,
    lastRet: poll.ret,
    lastLatencyMs: Math.round(poll.latencyMs),
    consecutiveFailures: poll.consecutiveFailures,
    nextPollAt: poll.nextPollAt,
  })
}

async function lockedStatus(tx: Db, serviceCode: string): Promise<UpstreamStatusRow | undefined> {
  const [row] = await tx.select().from(upstreamStatus).where(eq(upstreamStatus.serviceCode, serviceCode)).for('update')
  return row
}

async function upsert(db: Db, serviceCode: string, values: Partial<typeof upstreamStatus.$inferInsert>): Promise<void> {
  // Only the columns this outcome knows are replaced; a late write of an older outcome (a lease
  // that changed hands mid-poll) never overwrites a newer one.
  await db
    .insert(upstreamStatus)
    .values({ serviceCode, ...values })
    .onConflictDoUpdate({
      target: upstreamStatus.serviceCode,
      set: values,
      setWhere: sql`${upstreamStatus.lastPollAt} is null or ${upstreamStatus.lastPollAt} <= excluded.last_poll_at`,
    })
}
