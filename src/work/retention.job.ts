import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config/config.schema.js'
import type { Db } from '../storage/database.client.js'
import { pruneActions } from '../storage/outbound/action.statements.js'
import { pruneBatch } from '../storage/retention.statements.js'

const DAY_MS = 86_400_000
// The first prune waits a little after start, so it never competes with migrations, the first
// task_list poll and the deliveries queued while the gateway was down.
const FIRST_RUN_DELAY_MS = 10_000

/** What one prune removed from one table. */
export interface PruneResult {
  table: 'callbacks' | 'refusals' | 'actions'
  cutoff: Date
  deleted: number
  /** Statements it took; every one deletes at most `batchSize` rows. */
  statements: number
}

/** What {@link RetentionJob} is built from. */
export interface RetentionOptions {
  db: Db
  retention: Config['retention']
  /** `actions.retention`: days the audit of actions is kept; 0 (or absent) keeps it forever. */
  actionsRetentionDays?: number
  log: Pick<FastifyBaseLogger, 'info' | 'debug' | 'warn'>
  now?: () => Date
}

/**
 * The scheduled prune of old rows: callbacks by `received_at` after `callbacksDays`, refused
 * deliveries after `refusalsDays`. The folded task and user states are derived data and stay.
 * Rows go in batches of `batchSize`, each its own statement, so ingest keeps running beside a
 * large prune; rows another instance is deleting at the same moment are skipped, not waited for.
 */
export class RetentionJob {
  private timer: NodeJS.Timeout | undefined
  private running: Promise<PruneResult[]> | undefined
  private stopped = false
  private readonly now: () => Date

  constructor(private readonly options: RetentionOptions) {
    this.now = options.now ?? (() => new Date())
  }

  /** Whether anything is to be pruned on a schedule at all. */
  get enabled(): boolean {
    const { intervalMs, callbacksDays, refusalsDays } = this.options.retention
    return intervalMs > 0 && (callbacksDays > 0 || refusalsDays > 0 || (this.options.actionsRetentionDays ?? 0) > 0)
  }

  /** Schedules the prunes: the first shortly after start, then every `intervalMs`. */
  start(): void {
    this.stopped = false
    if (!this.enabled) return
    this.schedule(Math.min(FIRST_RUN_DELAY_MS, this.options.retention.intervalMs))
  }

  /** Cancels the schedule and waits for a prune under way, which stops after its current batch. */
  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    this.timer = undefined
    await this.running?.catch(() => undefined)
  }

  /** Prunes both tables now (a prune already running is joined, not doubled). */
  runOnce(): Promise<PruneResult[]> {
    this.running ??= this.prune().finally(() => {
      this.running = undefined
    })
    return this.running
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return
    this.timer = setTimeout(() => {
      void this.runOnce()
        .catch((error: unknown) => this.options.log.warn({ err: error }, 'retention: prune failed; trying again at the next interval'))
        .finally(() => this.schedule(this.options.retention.intervalMs))
    }, delayMs)
    this.timer.unref()
  }

  private async prune(): Promise<PruneResult[]> {
    const { callbacksDays, refusalsDays } = this.options.retention
    const now = this.now().getTime()
    const results: PruneResult[] = []
    if (callbacksDays > 0) results.push(await this.pruneTable('callbacks', new Date(now - callbacksDays * DAY_MS)))
    if (refusalsDays > 0) results.push(await this.pruneTable('refusals', new Date(now - refusalsDays * DAY_MS)))
    const actionsDays = this.options.actionsRetentionDays ?? 0
    if (actionsDays > 0) results.push(await this.pruneTable('actions', new Date(now - actionsDays * DAY_MS)))
    return results
  }

  private async pruneTable(table: PruneResult['table'], cutoff: Date): Promise<PruneResult> {
    const { db, retention, log } = this.options
    let deleted = 0
    let statements = 0
    for (;;) {
      const count = table === 'actions' ? await pruneActions(db, cutoff, retention.batchSize) : await pruneBatch(db, table, cutoff, retention.batchSize)
      statements += 1
      deleted += count
      if (count < retention.batchSize || this.stopped) break
    }
    const outcome = { table, cutoff, deleted, statements }
    if (deleted > 0) log.info({ table, cutoff: cutoff.toISOString(), deleted, statements }, `retention: pruned ${deleted} ${table} received before ${cutoff.toISOString()}`)
    else log.debug({ table, cutoff: cutoff.toISOString() }, 'retention: nothing to prune')
    return outcome
  }
}
