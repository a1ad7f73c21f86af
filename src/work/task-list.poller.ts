import type { FastifyBaseLogger } from 'fastify'
import type { Db } from '../storage/database.client.js'
import type { GraphChanges } from '../fold/graph.fold.js'
import { upstreamStatus } from '../storage/graph.table.js'
import { applyToGraph, taskListEvidence } from './graph.projection.js'
import type { Config } from '../config/config.schema.js'
import type { Metrics } from './metrics.registry.js'
import { TaskListClient } from './task-list.client.js'
import { UpstreamError } from '../model/upstream.error.js'

/** What {@link TaskListPoller} needs. */
export interface PollerOptions {
  db: Db
  client: TaskListClient
  /** The service codes that have a `baseUrl`. */
  serviceCodes: readonly string[]
  /** Between two polls of one service code; 0 polls only when asked. */
  intervalMs: number
  /** A refresh asked for within this long after the last success is not sent. */
  freshMs: number
  log: Pick<FastifyBaseLogger, 'warn' | 'error' | 'debug'>
  /** Told of every change a task_list answer made (realtime subscribers listen here). */
  onChanges?: (changes: GraphChanges) => void
  /** Where poll latency and failures are counted. */
  metrics?: Pick<Metrics, 'upstreamPollSeconds' | 'upstreamErrors'> | undefined
  now?: () => Date
}

/**
 * The poller for a configuration: every service code with a `baseUrl` and a secret, or none when
 * there is no such code. The client signs with the first configured header prefix.
 */
export function pollerFor(
  config: Config,
  db: Db,
  log: PollerOptions['log'],
  onChanges?: PollerOptions['onChanges'],
  metrics?: PollerOptions['metrics'],
): TaskListPoller | undefined {
  const serviceCodes = config.services.filter((service) => service.baseUrl && service.secrets.length > 0).map((service) => service.serviceCode)
  if (serviceCodes.length === 0) return undefined
  const client = new TaskListClient({ services: config.services, options: config.upstream, headerPrefix: config.ingest.signatureHeaderPrefixes[0] })
  return new TaskListPoller({
    db,
    client,
    serviceCodes,
    intervalMs: config.upstream.pollIntervalMs,
    freshMs: config.upstream.cacheMs,
    log,
    ...(onChanges ? { onChanges } : {}),
    metrics,
  })
}

/** The outcome of one refresh: the answer was folded in, or why not. */
export type RefreshOutcome = { ok: true; changes: GraphChanges } | { ok: false; error: UpstreamError }

/**
 * Keeps each service code's task_list in the database: on a timer, and on demand when a query
 * wants data no older than `freshMs`. Every success is folded into the task and user states (so
 * the graph knows what was listed when, and notices vanished tasks); every outcome is written to
 * `upstream_status`, which all gateway instances share.
 */
export class TaskListPoller {
  private readonly timers = new Map<string, NodeJS.Timeout>()
  private readonly running = new Map<string, Promise<RefreshOutcome>>()
  private readonly lastSuccess = new Map<string, number>()
  private readonly now: () => Date
  private stopped = false

  constructor(private readonly options: PollerOptions) {
    this.now = options.now ?? (() => new Date())
  }

  /** Starts polling every service code, the first poll at once. */
  start(): void {
    if (this.options.intervalMs <= 0) return
    for (const serviceCode of this.options.serviceCodes) this.schedule(serviceCode, 0)
  }

  /** Stops the timers and waits for a poll under way. */
  async stop(): Promise<void> {
    this.stopped = true
    for (const timer of this.timers.values()) clearTimeout(timer)
    this.timers.clear()
    await Promise.allSettled(this.running.values())
  }

  /** The service codes whose task_list is polled. */
  get serviceCodes(): readonly string[] {
    return this.options.serviceCodes
  }

  /** Whether this service code's task_list is polled at all. */
  covers(serviceCode: string): boolean {
    return this.options.serviceCodes.includes(serviceCode)
  }

  /**
   * Folds a fresh answer in unless the last success is younger than `freshMs`; concurrent
   * callers share one refresh.
   */
  async refresh(serviceCode: string): Promise<RefreshOutcome> {
    const last = this.lastSuccess.get(serviceCode)
    if (last !== undefined && this.now().getTime() - last < this.options.freshMs) return { ok: true, changes: { tasks: [], users: [] } }
    const running = this.running.get(serviceCode)
    if (running) return running
    const refresh = this.poll(serviceCode).finally(() => this.running.delete(serviceCode))
    this.running.set(serviceCode, refresh)
    return refresh
  }

  private schedule(serviceCode: string, delayMs: number): void {
    if (this.stopped) return
    const timer = setTimeout(() => {
      void this.refresh(serviceCode).finally(() => this.schedule(serviceCode, this.options.intervalMs))
    }, delayMs)
    timer.unref()
    this.timers.set(serviceCode, timer)
  }

  private async poll(serviceCode: string): Promise<RefreshOutcome> {
    const { db, client, log } = this.options
    const startedAt = this.now()
    const timer = performance.now()
    const observe = (outcome: string) => this.options.metrics?.upstreamPollSeconds.observe({ service_code: serviceCode, outcome }, (performance.now() - timer) / 1000)
    try {
      const answer = await client.get(serviceCode)
      const takenAt = this.now()
      const changes = await db.transaction(async (tx) => {
        const folded = await applyToGraph(tx as unknown as Db, [taskListEvidence(serviceCode, answer, takenAt)], takenAt)
        await recordStatus(tx as unknown as Db, serviceCode, {
          lastPollAt: takenAt,
          lastSuccessAt: takenAt,
          lastLatencyMs: takenAt.getTime() - startedAt.getTime(),
          taskCount: answer.task_list.length,
          userCount: answer.user_list.length,
        })
        return folded
      })
      this.lastSuccess.set(serviceCode, takenAt.getTime())
      observe('ok')
      if (changes.tasks.length > 0 || changes.users.length > 0) this.options.onChanges?.(changes)
      return { ok: true, changes }
    } catch (error) {
      const upstreamError = error instanceof UpstreamError ? error : new UpstreamError('NETWORK', serviceCode, 'The task list could not be kept.', { cause: error })
      // An answer the database could not keep is counted apart from the cloud's own failures.
      const kind = error instanceof UpstreamError ? error.kind : 'STORE'
      observe(kind)
      this.options.metrics?.upstreamErrors.inc({ service_code: serviceCode, kind })
      if (error instanceof UpstreamError) log.warn({ serviceCode, kind: error.kind, ret: error.ret }, `task_list failed: ${error.message}`)
      else log.error({ err: error, serviceCode }, 'task_list answer could not be stored')
      const at = this.now()
      await recordStatus(db, serviceCode, {
        lastPollAt: at,
        lastErrorAt: at,
        lastErrorKind: upstreamError.kind,
        lastErrorMessage: upstreamError.message,
        lastRet: upstreamError.ret ?? null,
        lastLatencyMs: at.getTime() - startedAt.getTime(),
      }).catch((statusError: unknown) => log.error({ err: statusError, serviceCode }, 'upstream status could not be stored'))
      return { ok: false, error: upstreamError }
    }
  }
}

async function recordStatus(db: Db, serviceCode: string, values: Partial<typeof upstreamStatus.$inferInsert>): Promise<void> {
  // Only the columns this outcome knows are replaced: an error keeps the last success.
  await db.insert(upstreamStatus).values({ serviceCode, ...values }).onConflictDoUpdate({ target: upstreamStatus.serviceCode, set: values })
}
