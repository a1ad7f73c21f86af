import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../config/config.schema.js'
import type { Db } from '../storage/database.client.js'
import { type HistoryPruned, type HistoryRetention, pruneHistory } from '../storage/history/sample.partitions.js'
import { pruneActions } from '../storage/outbound/action.statements.js'
import { pruneWebhooks } from '../storage/outbound/webhook.statements.js'
import { pruneBatch } from '../storage/retention.statements.js'
import { WakeScheduler } from './wake.scheduler.js'

const DAY_MS = 86_400_000
/** Dead letters are kept this long. */
export const DEAD_LETTER_RETENTION_MS = 30 * DAY_MS
// The first prune waits a little after start, so it never competes with migrations, the first
// task_list poll and the deliveries queued while the gateway was down.
const FIRST_RUN_DELAY_MS = 10_000
const FIRST_HISTORY_DELAY_MS = 15_000

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
  /** `webhooks.deliveredRetention`: with it, finished webhook deliveries are pruned on the same schedule. */
  webhooksDeliveredRetentionMs?: number | undefined
  /** The audience history (`history`), pruned every `pruneIntervalMs`; absent, it is not pruned here. */
  history?: { retention: HistoryRetention & { pruneIntervalMs: number }; onPartitionsDropped: () => void } | undefined
  log: Pick<FastifyBaseLogger, 'info' | 'debug' | 'warn'>
  /** The gateway's clock, which the cutoffs are judged by (the schedule keeps the process's own). */
  now?: (() => Date) | undefined
}

/** The settings of every prune, from the configuration (`retention`, `actions`, `webhooks`). */
export function retentionSettings(
  config: Pick<Config, 'retention' | 'actions' | 'webhooks'>,
): Pick<RetentionOptions, 'retention' | 'actionsRetentionDays' | 'webhooksDeliveredRetentionMs'> {
  return {
    retention: config.retention,
    actionsRetentionDays: config.actions.retention,
    webhooksDeliveredRetentionMs: config.webhooks.deliveredRetention,
  }
}

/** One prune on the schedule: when it is next due, by the process's clock. */
interface Step {
  name: 'retention' | 'webhooks' | 'history'
  firstMs: number
  everyMs: number
  dueAt: number
  run: () => Promise<unknown>
}

/**
 * Every scheduled prune of the gateway, on one timer: the log's callbacks by `received_at` after
 * `callbacksDays`, refused deliveries after `refusalsDays`, the audit of actions, finished webhook
 * deliveries, and the audience history (whole partitions of raw samples, rollups past their
 * retention). Each is a step with its own interval, as configured. The folded task and user
 * states are derived data and stay. Rows go in batches of `batchSize`, each its own statement, so
 * ingest keeps running beside a large prune; rows another instance is deleting at the same
 * moment are skipped, not waited for.
 */
export class RetentionJob {
  private running: Promise<PruneResult[]> | undefined
  private stopped = false
  private readonly now: () => Date
  private readonly steps: Step[] = []
  private readonly scheduler = new WakeScheduler({ run: () => this.runDue() })

  constructor(private readonly options: RetentionOptions) {
    this.now = options.now ?? (() => new Date())
    const { intervalMs } = options.retention
    if (this.tablesPruned)
      this.step('retention', intervalMs, Math.min(FIRST_RUN_DELAY_MS, intervalMs), () => this.runOnce())
    if (intervalMs > 0 && options.webhooksDeliveredRetentionMs !== undefined)
      this.step('webhooks', intervalMs, Math.min(FIRST_RUN_DELAY_MS, intervalMs), () => this.pruneWebhooks())
    const history = options.history
    const every = history?.retention.pruneIntervalMs ?? 0
    if (every > 0) this.step('history', every, Math.min(FIRST_HISTORY_DELAY_MS, every), () => this.pruneHistory())
  }

  /** Whether anything is to be pruned on a schedule at all. */
  get enabled(): boolean {
    return this.steps.length > 0
  }

  /** Schedules the prunes: each first shortly after start, then at its own interval. */
  start(): void {
    this.stopped = false
    this.scheduler.restart()
    const now = Date.now()
    for (const step of this.steps) step.dueAt = now + step.firstMs
    if (!this.enabled) this.options.log.debug('retention: no scheduled prune (the intervals or the retentions are 0)')
    this.wakeAtNext()
  }

  /** Cancels the schedule and waits for a prune under way, which stops after its current batch. */
  async stop(): Promise<void> {
    this.stopped = true
    await this.scheduler.stop()
    await this.running?.catch(() => undefined)
  }

  /** Prunes the callbacks, refusals and actions now (a prune already running is joined, not doubled). */
  runOnce(): Promise<PruneResult[]> {
    this.running ??= this.pruneTables().finally(() => {
      this.running = undefined
    })
    return this.running
  }

  /** Drops finished webhook deliveries past their retention, in batches; answers how many went. */
  async pruneWebhooks(now = this.now()): Promise<number> {
    const delivered = this.options.webhooksDeliveredRetentionMs ?? 0
    return pruneDeliveries(this.options, delivered, now)
  }

  /** Prunes the audience history now, as of the gateway's clock. */
  async pruneHistory(): Promise<HistoryPruned | undefined> {
    const history = this.options.history
    if (!history) return undefined
    const pruned = await pruneHistory(this.options.db, history.retention, this.now().getTime())
    if (pruned.partitions.length > 0) {
      history.onPartitionsDropped()
      const { partitions, rollupRows } = pruned
      this.options.log.info(
        { partitions, rollupRows },
        `history: dropped ${partitions.length} partitions of raw samples`,
      )
    }
    return pruned
  }

  private get tablesPruned(): boolean {
    const { intervalMs, callbacksDays, refusalsDays } = this.options.retention
    return intervalMs > 0 && (callbacksDays > 0 || refusalsDays > 0 || (this.options.actionsRetentionDays ?? 0) > 0)
  }

  private step(name: Step['name'], everyMs: number, firstMs: number, run: () => Promise<unknown>): void {
    this.steps.push({ name, firstMs, everyMs, dueAt: Number.POSITIVE_INFINITY, run })
  }

  private wakeAtNext(): void {
    if (this.steps.length === 0) return
    const next = Math.min(...this.steps.map((step) => step.dueAt))
    this.scheduler.wakeIn(Math.max(0, next - Date.now()))
  }

  // Each due step in turn; the next is due an interval after this one ended, as a timer per step was.
  private async runDue(): Promise<undefined> {
    for (const step of this.steps) {
      if (this.stopped || step.dueAt > Date.now()) continue
      await step
        .run()
        .catch((error: unknown) =>
          this.options.log.warn({ err: error }, `${step.name}: prune failed; trying again at the next interval`),
        )
      step.dueAt = Date.now() + step.everyMs
    }
    if (!this.stopped) this.wakeAtNext()
    return undefined
  }

  private async pruneTables(): Promise<PruneResult[]> {
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
      const count =
        table === 'actions'
          ? await pruneActions(db, cutoff, retention.batchSize)
          : await pruneBatch(db, table, cutoff, retention.batchSize)
      statements += 1
      deleted += count
      if (count < retention.batchSize || this.stopped) break
    }
    const outcome = { table, cutoff, deleted, statements }
    const at = cutoff.toISOString()
    if (deleted > 0)
      log.info(
        { table, cutoff: at, deleted, statements },
        `retention: pruned ${deleted} ${table} received before ${at}`,
      )
    else log.debug({ table, cutoff: at }, 'retention: nothing to prune')
    return outcome
  }
}

/**
 * Drops delivered webhook records past `deliveredRetentionMs` and dead letters past 30 days, in
 * batches of `retention.batchSize`; answers how many went.
 */
export async function pruneDeliveries(
  options: Pick<RetentionOptions, 'db' | 'retention' | 'log'>,
  deliveredRetentionMs: number,
  now: Date,
): Promise<number> {
  const { db, retention, log } = options
  const delivered = new Date(now.getTime() - deliveredRetentionMs)
  const dead = new Date(now.getTime() - DEAD_LETTER_RETENTION_MS)
  let deleted = 0
  for (;;) {
    const count = await pruneWebhooks(db, delivered, dead, retention.batchSize)
    deleted += count
    if (count < retention.batchSize) break
  }
  if (deleted > 0) log.info({ deleted }, `webhooks: pruned ${deleted} finished deliveries`)
  return deleted
}
