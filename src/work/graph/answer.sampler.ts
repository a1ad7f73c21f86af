import { type AnswerSamples, sampleAnswer } from '../../fold/answer.sample.js'
import { taskEvents } from '../../model/event.codec.js'
import type { TaskListAnswer } from '../../model/task-list.schema.js'
import type { Db } from '../../storage/database.client.js'
import { notifyStatement } from '../../storage/notify.statements.js'
import { createSamplePartitions } from '../../storage/history/sample.partitions.js'
import { appendWebhookEvents } from '../../storage/outbound/webhook.statements.js'
import { sampledTransitions } from '../../fold/task.transitions.js'
import { readLiveTasks, writeSamples } from '../../storage/history/sample.statements.js'
import type { HistoryMetrics } from '../metrics.registry.js'

/**
 * Samples each task_list answer the poller folds (so only the code's lease holder writes): one
 * sample per listed task, the rollups, health and reconciliation, in the answer's transaction.
 */
export class AnswerSampler {
  // Partitions this process knows exist; the database is asked again only for a new period.
  private readonly partitions = new Set<string>()

  constructor(private readonly options: { graceMs: number; metrics?: HistoryMetrics | undefined }) {}

  /** Makes sure the partitions for samples taken at `at` exist; outside the answer's transaction. */
  async prepare(db: Db, at: Date): Promise<void> {
    const names = [at.getTime(), at.getTime() + 3_600_000].map((t) => new Date(t).toISOString().slice(0, 13))
    if (names.every((name) => this.partitions.has(name))) return
    await createSamplePartitions(db, at.getTime())
    for (const name of names) this.partitions.add(name)
  }

  /** Forgets the partitions it knew (retention dropped some). */
  forgetPartitions(): void {
    this.partitions.clear()
  }

  /**
   * Samples one answer in the caller's transaction, under the code's graph lock: reads what the
   * previous answers left, folds, writes it all in one statement, and announces the samples and
   * the tasks whose health changed (delivered only if the transaction commits), with the health
   * changes and missing callbacks as webhook events.
   */
  async sample(tx: Db, serviceCode: string, answer: TaskListAnswer, at: Date): Promise<AnswerSamples> {
    const before = await readLiveTasks(tx, serviceCode)
    const samples = sampleAnswer(serviceCode, answer, at.getTime(), before.live, before.callbacks, this.options.graceMs)
    // Heard by the realtime engine (`metricsSampled`, `taskChanged`) and the alert watch, once committed.
    const notify = notifyStatement([
      ...taskEvents(samples.healthChanged.map((taskId) => ({ serviceCode, taskId }))),
      ...(samples.tasks.length > 0 ? [{ kind: 'sample', serviceCode, at: at.getTime() } as const] : []),
    ])
    await Promise.all([
      writeSamples(tx, samples),
      appendWebhookEvents(tx, sampledTransitions(serviceCode, samples, at, this.options.graceMs)),
      notify ? tx.execute(notify) : undefined,
    ])
    return samples
  }

  /** Counts what a committed answer found (each missing callback once: its check is settled for good). */
  committed(samples: AnswerSamples): void {
    const metrics = this.options.metrics
    if (!metrics) return
    metrics.samples.inc({ service_code: samples.serviceCode }, samples.tasks.length)
    for (const missing of samples.missing)
      metrics.callbacksMissing.inc({
        service_code: samples.serviceCode,
        kind: missing.kind === 'LIVE_START' ? 'start' : 'end',
      })
  }
}
