import type { Registry } from 'prom-client'
import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../../config/config.schema.js'
import { reconcileGraceMs } from '../../config/history.schema.js'
import type { Database } from '../../storage/database.client.js'
import { type HistoryPruned, pruneHistory } from '../../storage/history/sample.partitions.js'
import { AnswerSampler } from './answer.sampler.js'
import { SampleHub } from './sample.hub.js'
import { type HistoryMetrics, historyMetrics } from '../metrics.registry.js'
import type { ChannelListener } from '../channel.listener.js'

// The first prune waits a little after start, like the callbacks' retention.
const FIRST_PRUNE_MS = 15_000

/**
 * The audience and health history of a gateway: the sampler the poller hands each answer to,
 * the hub of `metricsSampled`, and the scheduled prune (whole partitions of raw samples,
 * rollups past their retention).
 */
export class MetricsHistory {
  readonly sampler: AnswerSampler
  readonly hub: SampleHub
  readonly metrics: HistoryMetrics
  readonly graceMs: number
  private timer: NodeJS.Timeout | undefined
  private pruning: Promise<HistoryPruned> | undefined
  private stopped = false
  private readonly now: () => Date

  constructor(
    private readonly options: {
      config: Config
      database: Database
      channels: Pick<ChannelListener, 'on'>
      log: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>
      registry: Registry
      now?: (() => Date) | undefined
    },
  ) {
    this.now = options.now ?? (() => new Date())
    this.metrics = historyMetrics(options.registry)
    this.graceMs = reconcileGraceMs(options.config)
    this.sampler = new AnswerSampler({ graceMs: this.graceMs, metrics: this.metrics })
    const { database, channels, log } = options
    this.hub = new SampleHub({ database, channels, log, subscriberBuffer: options.config.realtime.subscriberBuffer })
  }

  async start(): Promise<void> {
    this.stopped = false
    this.hub.start()
    // Only a gateway that polls a task_list has history to prune (its own samples, or a peer's).
    const { config } = this.options
    const polls = config.upstream.pollIntervalMs > 0 && config.services.some((service) => service.baseUrl)
    if (polls && config.history.pruneIntervalMs > 0) this.schedule(Math.min(FIRST_PRUNE_MS, this.options.config.history.pruneIntervalMs))
  }

  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    await this.pruning?.catch(() => undefined)
    await this.hub.stop()
  }

  /** Prunes the history now, as of the gateway's clock (a prune under way is joined). */
  prune(): Promise<HistoryPruned> {
    this.pruning ??= pruneHistory(this.options.database.db, this.options.config.history, this.now().getTime())
      .then((pruned) => {
        if (pruned.partitions.length > 0) {
          this.sampler.forgetPartitions()
          this.options.log.info({ partitions: pruned.partitions, rollupRows: pruned.rollupRows }, `history: dropped ${pruned.partitions.length} partitions of raw samples`)
        }
        return pruned
      })
      .finally(() => {
        this.pruning = undefined
      })
    return this.pruning
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return
    this.timer = setTimeout(() => {
      void this.prune()
        .catch((error: unknown) => this.options.log.warn({ err: error }, 'history: prune failed; trying again at the next interval'))
        .finally(() => this.schedule(this.options.config.history.pruneIntervalMs))
    }, delayMs)
    this.timer.unref()
  }
}
