import postgres from 'postgres'

/** What the sampler saw while a window ran. */
export interface WaitSamples {
  samples: number
  /**
   * Samples in which some backend of the database waited on a heavyweight lock
   * (`wait_event_type = 'Lock'`), other than a relation's extension lock (`extend`): PostgreSQL
   * takes that one itself whenever two backends add pages to one table, whoever inserts.
   */
  lockWaitSamples: number
  /** The most lock requests not granted at once, server-wide. */
  maxUngranted: number
  /** Active backends summed over samples, by `type:event` (`CPU` when not waiting). */
  byEvent: Record<string, number>
  /** Lock requests not granted, summed over samples, by what they wait for (`object pg_database 0` is NOTIFY's). */
  ungrantedOn: Record<string, number>
}

const EVERY_MS = 50

/**
 * Reads `pg_stat_activity` and `pg_locks` every 50 ms while a window runs, from a connection of
 * its own: whether ingest backends ever wait on a lock, and on what they do wait (WAL flushes,
 * the client, CPU). A global ingest lock would show as `Lock:advisory` or `Lock:relation` waits
 * in most samples.
 */
export function sampleWaits(databaseUrl: string): { stop(): Promise<WaitSamples> } {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} })
  const seen = emptySamples()
  let running = true
  const loop = (async () => {
    while (running) {
      const rows = await sql<{ type: string | null; event: string | null; n: number }[]>`
        select wait_event_type as type, wait_event as event, count(*)::int as n
        from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid() and state = 'active'
        group by 1, 2`
      // Server-wide: NOTIFY's lock is on "database 0", shared by every database of the cluster.
      const ungranted = await sql<{ on: string; n: number }[]>`
        select concat_ws(' ', locktype, classid::regclass::text, objid::text, relation::regclass::text, mode) as on,
          count(*)::int as n
        from pg_locks where not granted group by 1`
      seen.samples++
      if (rows.some((row) => row.type === 'Lock' && row.event !== 'extend')) seen.lockWaitSamples++
      for (const row of rows) {
        const key = row.type ? `${row.type}:${row.event}` : 'CPU'
        seen.byEvent[key] = (seen.byEvent[key] ?? 0) + row.n
      }
      seen.maxUngranted = Math.max(
        seen.maxUngranted,
        ungranted.reduce((n, row) => n + row.n, 0),
      )
      for (const row of ungranted) seen.ungrantedOn[row.on] = (seen.ungrantedOn[row.on] ?? 0) + row.n
      await new Promise((resolve) => setTimeout(resolve, EVERY_MS))
    }
  })()
  return {
    async stop() {
      running = false
      await loop
      await sql.end()
      return seen
    },
  }
}

/** Nothing sampled yet. */
export function emptySamples(): WaitSamples {
  return { samples: 0, lockWaitSamples: 0, maxUngranted: 0, byEvent: {}, ungrantedOn: {} }
}

/** Several windows' samples as one. */
export function addSamples(into: WaitSamples, more: WaitSamples): WaitSamples {
  into.samples += more.samples
  into.lockWaitSamples += more.lockWaitSamples
  into.maxUngranted = Math.max(into.maxUngranted, more.maxUngranted)
  for (const [key, n] of Object.entries(more.byEvent)) into.byEvent[key] = (into.byEvent[key] ?? 0) + n
  for (const [key, n] of Object.entries(more.ungrantedOn)) into.ungrantedOn[key] = (into.ungrantedOn[key] ?? 0) + n
  return into
}

/** The events backends spent most samples in, e.g. `CPU 61%, IO:WALSync 22%`. */
export function topEvents(samples: WaitSamples, count = 4): string {
  const total = Object.values(samples.byEvent).reduce((a, b) => a + b, 0)
  if (total === 0) return 'no active backend sampled'
  return Object.entries(samples.byEvent)
    .sort(([, a], [, b]) => b - a)
    .slice(0, count)
    .map(([key, n]) => `${key} ${((100 * n) / total).toFixed(0)}%`)
    .join(', ')
}
