import { type Db, ping } from '../../storage/database.client.js'
import { judgeUpstream, readUpstreamStatus } from '../../storage/history/upstream-status.statements.js'

/** The spool as readiness sees it: how many callbacks wait in it for the database. */
export interface SpoolDepth {
  depth(): number
}

/** One polled service code's task_list health, as `/readyz` reports it. */
export interface UpstreamHealth {
  serviceCode: string
  /** Whether its latest poll succeeded; null when the database could not say. */
  healthy: boolean | null
  /** No successful poll within three poll intervals and one timeout; null when the database could not say. */
  stale: boolean | null
  consecutiveFailures: number | null
  lastSuccessAt: string | null
}

/**
 * The answer of `/readyz`. It names no host, URL or driver message: only a timing, a short
 * error code and counts, so it is safe to expose to a load balancer.
 */
export interface ReadinessReport {
  ready: boolean
  database: { ok: boolean; latencyMs: number; error?: string }
  spool: { depth: number } | null
  /** Whether this process's realtime engine hears its channels (subscriptions wait on it). */
  realtime: { listening: boolean } | null
  upstream: UpstreamHealth[]
  /** Each streaming replica (`database.readUrls`): serving, lagging or down; never makes the gateway unready. */
  replicas?: ReadonlyArray<{ name: string; state: string; lagMs: number }>
}

/** What {@link probeReadiness} looks at. */
export interface ReadinessSources {
  db: Db
  timeoutMs: number
  spool?: SpoolDepth | undefined
  /** The service codes whose task_list is polled. */
  serviceCodes?: readonly string[] | undefined
  /** See `staleAfterMs`; 0 when nothing is polled. */
  staleMs?: number | undefined
  /** The realtime engine, whose subscribers go deaf when it does not hear its channels. */
  realtime?: { readonly listening: boolean } | undefined
  /** The replicas' states as last probed (a read they cannot serve goes to the primary). */
  replicas?: (() => ReadonlyArray<{ name: string; state: string; lagMs: number }>) | undefined
}

/** What went wrong with the database, for the log: the error itself, never in the answer. */
export interface ReadinessProbe {
  report: ReadinessReport
  failure?: unknown
}

/**
 * Ready when the database answers `select 1` within `timeoutMs` and the realtime engine hears its
 * channel (a worker whose hub went deaf would hold subscriptions that never get an event). The upstream task_list
 * health is
 * reported beside it but never makes the gateway unready: callbacks must still be taken while
 * the cloud's API is down.
 */
export async function probeReadiness(sources: ReadinessSources): Promise<ReadinessProbe> {
  const { db, timeoutMs } = sources
  const startedAt = performance.now()
  let failure: unknown
  try {
    await withTimeout(ping(db), timeoutMs)
  } catch (error) {
    failure = error
  }
  const latencyMs = Math.round((performance.now() - startedAt) * 10) / 10
  const database =
    failure === undefined ? { ok: true, latencyMs } : { ok: false, latencyMs, error: failureCode(failure) }
  const spool = sources.spool ? { depth: sources.spool.depth() } : null
  const upstream = await upstreamHealth(
    db,
    sources.serviceCodes ?? [],
    sources.staleMs ?? 0,
    database.ok ? timeoutMs : 0,
  )
  const realtime = sources.realtime ? { listening: sources.realtime.listening } : null
  return {
    report: {
      ready: database.ok && (realtime?.listening ?? true),
      database,
      spool,
      realtime,
      upstream,
      ...(sources.replicas ? { replicas: sources.replicas() } : {}),
    },
    ...(failure === undefined ? {} : { failure }),
  }
}

async function upstreamHealth(
  db: Db,
  serviceCodes: readonly string[],
  staleMs: number,
  timeoutMs: number,
): Promise<UpstreamHealth[]> {
  if (serviceCodes.length === 0) return []
  const unknown = serviceCodes.map((serviceCode) => ({
    serviceCode,
    healthy: null,
    stale: null,
    consecutiveFailures: null,
    lastSuccessAt: null,
  }))
  if (timeoutMs <= 0) return unknown
  try {
    const byCode = await withTimeout(readUpstreamStatus(db, serviceCodes), timeoutMs)
    const now = new Date()
    return serviceCodes.map((serviceCode) => {
      const row = byCode.get(serviceCode)
      // Not polled yet counts as unhealthy: nothing from the task_list is known.
      const { healthy, stale } = judgeUpstream(row, now, staleMs)
      return {
        serviceCode,
        healthy,
        stale,
        consecutiveFailures: row?.consecutiveFailures ?? 0,
        lastSuccessAt: row?.lastSuccessAt?.toISOString() ?? null,
      }
    })
  } catch {
    return unknown
  }
}

class ProbeTimeout extends Error {
  override name = 'ProbeTimeout'
}

async function withTimeout<T>(work: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new ProbeTimeout(`no answer within ${timeoutMs} ms`)), timeoutMs)
  })
  try {
    return await Promise.race([work, timeout])
  } finally {
    clearTimeout(timer)
  }
}

// Driver messages may name hosts, users or statement values: the answer carries only a code
// (postgres.js's `CONNECTION_ENDED`, a socket's `ECONNREFUSED`, a SQLSTATE), found on the error
// or one of its causes.
function failureCode(error: unknown): string {
  if (error instanceof ProbeTimeout) return 'TIMEOUT'
  for (let cause = error, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) {
    const code = (cause as { code?: unknown }).code
    if (typeof code === 'string' && /^[A-Z0-9_]{2,40}$/.test(code)) return code
  }
  return 'UNAVAILABLE'
}
