import type { Registry } from 'prom-client'
import type { Config } from '../../config/config.schema.js'
import { reconcileGraceMs } from '../../config/history.schema.js'
import { AnswerSampler } from './answer.sampler.js'
import { type HistoryMetrics, historyMetrics } from '../metrics.registry.js'

/**
 * The audience and health history of a gateway: the sampler the poller hands each answer to (its
 * samples reach `metricsSampled` through the realtime engine). Its prune is a step of the retention
 * job (`retention.job.ts`).
 */
export class AudienceHistory {
  readonly sampler: AnswerSampler
  readonly metrics: HistoryMetrics
  readonly graceMs: number

  constructor(
    private readonly options: {
      config: Config
      registry: Registry
    },
  ) {
    this.metrics = historyMetrics(options.registry)
    this.graceMs = reconcileGraceMs(options.config)
    this.sampler = new AnswerSampler({ graceMs: this.graceMs, metrics: this.metrics })
  }

  /** Whether a task_list is polled here: only then is there history to prune (its own samples, or a peer's). */
  get polled(): boolean {
    const { config } = this.options
    return config.upstream.pollIntervalMs > 0 && config.services.some((service) => service.baseUrl)
  }

  /** What the retention job prunes of it, and what it tells when whole partitions went. */
  get retention(): { retention: Config['history']; onPartitionsDropped: () => void } {
    return { retention: this.options.config.history, onPartitionsDropped: () => this.sampler.forgetPartitions() }
  }
}
