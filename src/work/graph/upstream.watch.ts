import type { FastifyBaseLogger } from 'fastify'
import type { Db } from '../../storage/database.client.js'
import type { UpstreamStatusRow } from '../../storage/tables/graph.table.js'
import { judgeUpstream, readUpstreamStatus } from '../../storage/history/upstream-status.statements.js'
import type { Metrics } from '../metrics.registry.js'
import { WakeScheduler } from '../wake.scheduler.js'

/** What a reader needs to know of a stale service code. */
export interface StaleUpstream {
  serviceCode: string
  lastSuccessAt: Date | null
  consecutiveFailures: number
}

type Seen = Pick<UpstreamStatusRow, 'lastSuccessAt' | 'lastErrorAt' | 'consecutiveFailures'>

/** What {@link UpstreamWatch} is built from. */
export interface WatchOptions {
  db: Db
  serviceCodes: readonly string[]
  /** See `staleAfterMs`. */
  staleMs: number
  /** How often the stored status is read again. */
  refreshMs: number
  log: Pick<FastifyBaseLogger, 'warn'>
  metrics?: Pick<Metrics, 'upstreamConsecutiveFailures'> | undefined
  now?: () => Date
}

/**
 * This process's copy of the polled codes' stored status, so that every answer can say which of
 * its codes are stale without a statement of its own. The lease holder tells it each outcome at
 * once; other instances read what the holder stored, every `refreshMs`.
 */
export class UpstreamWatch {
  private readonly seen = new Map<string, Seen>()
  private readonly refreshes: WakeScheduler
  private readonly now: () => Date

  constructor(private readonly options: WatchOptions) {
    this.now = options.now ?? (() => new Date())
    this.refreshes = new WakeScheduler({
      run: async () => {
        await this.refresh()
        return { within: options.refreshMs }
      },
    })
  }

  /** Reads the stored status now and then every `refreshMs`. */
  async start(): Promise<void> {
    this.refreshes.restart()
    this.refreshes.wake()
    await this.refreshes.settled()
  }

  /** No more reads; one under way ends on its own. */
  stop(): void {
    void this.refreshes.stop()
  }

  /** Reads the stored status of every polled code; a database that does not answer keeps the last copy. */
  async refresh(): Promise<void> {
    try {
      const rows = await readUpstreamStatus(this.options.db, this.options.serviceCodes)
      for (const [code, row] of rows)
        this.note(code, {
          lastSuccessAt: row.lastSuccessAt,
          lastErrorAt: row.lastErrorAt,
          consecutiveFailures: row.consecutiveFailures,
        })
    } catch (error) {
      this.options.log.warn({ err: error }, 'upstream status could not be read')
    }
  }

  /** What the holder just stored for a code; what it leaves out is kept. */
  note(serviceCode: string, seen: Partial<Seen>): void {
    const known = this.seen.get(serviceCode) ?? { lastSuccessAt: null, lastErrorAt: null, consecutiveFailures: 0 }
    const next = { ...known, ...seen }
    this.seen.set(serviceCode, next)
    this.options.metrics?.upstreamConsecutiveFailures.set({ service_code: serviceCode }, next.consecutiveFailures)
  }

  /** The stale codes among these, in their order; codes that are not polled are never stale. */
  staleAmong(serviceCodes: Iterable<string>): StaleUpstream[] {
    const now = this.now()
    const stale: StaleUpstream[] = []
    for (const serviceCode of serviceCodes) {
      if (!this.options.serviceCodes.includes(serviceCode)) continue
      const seen = this.seen.get(serviceCode)
      if (!judgeUpstream(seen, now, this.options.staleMs).stale) continue
      stale.push({
        serviceCode,
        lastSuccessAt: seen?.lastSuccessAt ?? null,
        consecutiveFailures: seen?.consecutiveFailures ?? 0,
      })
    }
    return stale
  }
}
