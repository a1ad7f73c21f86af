import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../../config/config.schema.js'
import { UpstreamError } from '../upstream.error.js'
import type { Db } from '../../storage/database.client.js'
import type { GraphChanges } from '../../fold/graph.fold.js'
import { acquireLease, releaseLease } from '../../storage/lease.statements.js'
import {
  readUpstreamStatus,
  recordPollFailure,
  recordPollSuccess,
  staleAfterMs,
} from '../../storage/history/upstream-status.statements.js'
import { foldTaskListAnswer, pollDelayMs } from './task-list.answer.js'
import type { AnswerSampler } from './answer.sampler.js'
import type { Metrics } from '../metrics.registry.js'
import { TaskListClient } from './task-list.client.js'
import type { CloudClient } from '../cloud.client.js'
import { UpstreamWatch } from './upstream.watch.js'
import { LeasedPoller } from '../leased.poller.js'
import { SpanStatusCode } from '@opentelemetry/api'
import { inSpan } from '../tracing.spans.js'

/** What {@link TaskListPoller} needs. */
export interface PollerOptions {
  db: Db
  client: TaskListClient
  /** The service codes that have a `baseUrl`. */
  serviceCodes: readonly string[]
  /** Between two polls of one service code while it answers. */
  intervalMs: number
  /** The longest wait between two polls of a failing code. */
  maxBackoffMs: number
  /** This gateway instance, as lease holder: unique per process and per gateway in it. */
  instanceId: string
  log: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error' | 'debug'>
  /** Told of every change a task_list answer made in this process. */
  onChanges?: (changes: GraphChanges) => void
  metrics?:
    | Pick<Metrics, 'upstreamPollSeconds' | 'upstreamErrors' | 'upstreamConsecutiveFailures' | 'upstreamLeaseHeld'>
    | undefined
  /** See `staleAfterMs`; by default three intervals. */
  staleMs?: number
  /** How long a lease lasts unless renewed; by default the poll interval, at least a second. */
  leaseMs?: number
  now?: () => Date
  /** Samples every answer folded (audience and health history); none when absent. */
  sampler?: AnswerSampler | undefined
  /** Jitter source in [0, 1). */
  random?: () => number
}

/**
 * The poller for a configuration: every service code with a `baseUrl` and a secret, or none when
 * there is no such code or polling is off. The client signs with the first configured header prefix.
 */
export function pollerFor(
  config: Config,
  db: Db,
  log: PollerOptions['log'],
  onChanges?: PollerOptions['onChanges'],
  metrics?: PollerOptions['metrics'],
  more: Pick<PollerOptions, 'sampler' | 'now'> & { cloud?: CloudClient } = {},
): TaskListPoller | undefined {
  const serviceCodes = config.services
    .filter((service) => service.baseUrl && service.secrets.length > 0)
    .map((service) => service.serviceCode)
  if (serviceCodes.length === 0 || config.upstream.pollIntervalMs <= 0) return undefined
  const { cloud, ...rest } = more
  const headerPrefix = config.ingest.signatureHeaderPrefixes[0]
  const client = new TaskListClient({ services: config.services, options: config.upstream, headerPrefix, cloud })
  return new TaskListPoller({
    db,
    client,
    serviceCodes,
    intervalMs: config.upstream.pollIntervalMs,
    maxBackoffMs: config.upstream.maxBackoffMs,
    staleMs: staleAfterMs(config.upstream),
    instanceId: `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`,
    log,
    ...(onChanges ? { onChanges } : {}),
    metrics,
    ...rest,
  })
}

const leaseName = (serviceCode: string) => `task_list:${serviceCode}`

/**
 * Keeps each service code's task_list in the database, in the background: queries only ever read
 * what it stored. Across gateway instances on one database, a lease per code picks the one
 * instance that polls it ({@link LeasedPoller}: renewed on its own timer, so a slow or backed-off
 * poll never loses it, and released on stop). Every success is folded into the graph (so vanished
 * tasks are noticed); every outcome is written to `upstream_status`, which all instances read.
 */
export class TaskListPoller {
  /** This process's copy of the polled codes' status (what answers report as stale). */
  readonly watch: UpstreamWatch
  private readonly leases: LeasedPoller
  private readonly failures = new Map<string, number>()
  private readonly now: () => Date
  private readonly random: () => number
  /** After how long without a success a code is stale (what `upstream.stale` tells). */
  private readonly staleMs: number

  constructor(private readonly options: PollerOptions) {
    this.now = options.now ?? (() => new Date())
    this.staleMs = options.staleMs ?? 3 * options.intervalMs
    this.random = options.random ?? Math.random
    const { db, instanceId, metrics } = options
    const leaseMs = options.leaseMs ?? Math.max(options.intervalMs, 1000)
    this.leases = new LeasedPoller({
      name: 'task_list',
      serviceCodes: options.serviceCodes,
      leaseMs,
      acquire: (code) => acquireLease(db, leaseName(code), instanceId, leaseMs),
      release: (code) => releaseLease(db, leaseName(code), instanceId),
      poll: (code) => this.poll(code),
      resume: (code) => this.resume(code),
      onHeld: (code, held) => metrics?.upstreamLeaseHeld.set({ service_code: code }, held ? 1 : 0),
      log: options.log,
    })
    this.watch = new UpstreamWatch({
      db,
      serviceCodes: options.serviceCodes,
      staleMs: this.staleMs,
      refreshMs: Math.min(Math.max(options.intervalMs, 250), 5000),
      log: options.log,
      metrics,
      now: this.now,
    })
  }

  /** Starts taking leases (the first poll of a code as soon as its lease is held) and watching the status. */
  start(): void {
    void this.watch.start()
    this.leases.start()
  }

  /** Stops polling: requests under way are aborted, the leases given up for another instance. */
  async stop(): Promise<void> {
    await this.leases.stop(() => {
      this.watch.stop()
      this.options.client.close()
    })
  }

  /** The service codes whose task_list is polled. */
  get serviceCodes(): readonly string[] {
    return this.options.serviceCodes
  }

  /** Whether this service code's task_list is polled at all (by this instance or another). */
  covers(serviceCode: string): boolean {
    return this.leases.covers(serviceCode)
  }

  /** Whether this instance holds the lease to poll a code. */
  holds(serviceCode: string): boolean {
    return this.leases.holds(serviceCode)
  }

  // A new holder goes on from where the last one stopped: its back-off and its next poll time.
  private async resume(code: string): Promise<number> {
    this.options.log.info(
      { serviceCode: code, instance: this.options.instanceId },
      'polling the task_list of this code',
    )
    const row = await readUpstreamStatus(this.options.db, [code]).then(
      (rows) => rows.get(code),
      () => undefined,
    )
    this.failures.set(code, row?.consecutiveFailures ?? 0)
    const wait = row?.nextPollAt ? row.nextPollAt.getTime() - this.now().getTime() : 0
    return Math.min(Math.max(wait, 0), Math.max(this.options.maxBackoffMs, this.options.intervalMs))
  }

  /** One poll of one code, its outcome stored, in a span (a trace) of its own; resolves to the wait before the next. */
  private poll(serviceCode: string): Promise<number> {
    return inSpan('task_list poll', { root: true, attributes: { 'livegate.service_code': serviceCode } }, (span) =>
      this.pollOnce(serviceCode, (outcome) => {
        span?.setAttribute('livegate.poll.outcome', outcome)
        if (outcome !== 'ok') span?.setStatus({ code: SpanStatusCode.ERROR, message: outcome })
      }),
    )
  }

  private async pollOnce(serviceCode: string, traced: (outcome: string) => void): Promise<number> {
    const { db, client, log, intervalMs, metrics } = this.options
    const started = performance.now()
    const observe = (outcome: string) => {
      traced(outcome)
      metrics?.upstreamPollSeconds.observe({ service_code: serviceCode, outcome }, (performance.now() - started) / 1000)
    }
    let kind: string
    let failure: UpstreamError
    try {
      // The request holds nothing: no transaction, no lock, until an answer is in hand.
      const answer = await client.get(serviceCode)
      if (this.leases.stopped) return 0
      const at = this.now()
      try {
        const changes = await foldTaskListAnswer(db, serviceCode, answer, at, this.options.sampler)
        this.failures.set(serviceCode, 0)
        const success = {
          at,
          latencyMs: performance.now() - started,
          taskCount: answer.task_list.length,
          userCount: answer.user_list.length,
          nextPollAt: new Date(at.getTime() + intervalMs),
        }
        await recordPollSuccess(db, serviceCode, success, this.staleMs)
        this.watch.note(serviceCode, { lastSuccessAt: at, lastErrorAt: null, consecutiveFailures: 0 })
        observe('ok')
        if (changes.tasks.length > 0 || changes.users.length > 0) this.options.onChanges?.(changes)
        return intervalMs
      } catch (error) {
        log.error({ err: error, serviceCode }, 'task_list answer could not be stored')
        // An answer the database could not keep is counted apart from the cloud's own failures.
        kind = 'STORE'
        failure = new UpstreamError('NETWORK', serviceCode, `The task list of ${serviceCode} could not be stored.`, {
          cause: error,
        })
      }
    } catch (error) {
      failure =
        error instanceof UpstreamError
          ? error
          : new UpstreamError('NETWORK', serviceCode, `The task list of ${serviceCode} could not be read.`, {
              cause: error,
            })
      kind = failure.kind
      if (this.leases.stopped) return 0
      log.warn({ serviceCode, kind, ret: failure.ret }, `task_list failed: ${failure.message}`)
    }
    observe(kind)
    metrics?.upstreamErrors.inc({ service_code: serviceCode, kind })
    const failures = (this.failures.get(serviceCode) ?? 0) + 1
    this.failures.set(serviceCode, failures)
    const delay = pollDelayMs(failures, intervalMs, this.options.maxBackoffMs, this.random)
    const at = this.now()
    const polled = {
      at,
      latencyMs: performance.now() - started,
      kind,
      message: failure.message,
      ret: failure.ret ?? null,
      consecutiveFailures: failures,
      nextPollAt: new Date(at.getTime() + delay),
    }
    await recordPollFailure(db, serviceCode, polled, this.staleMs).catch((error: unknown) =>
      log.error({ err: error, serviceCode }, 'upstream status could not be stored'),
    )
    this.watch.note(serviceCode, { lastErrorAt: at, consecutiveFailures: failures })
    return delay
  }
}
