import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../../config/config.schema.js'
import { UpstreamError } from '../../model/upstream.error.js'
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

interface CodeState {
  held: boolean
  failures: number
  timer: NodeJS.Timeout | undefined
  polling: Promise<void> | undefined
}

const leaseName = (serviceCode: string) => `task_list:${serviceCode}`

/**
 * Keeps each service code's task_list in the database, in the background: queries only ever read
 * what it stored. Across gateway instances on one database, a lease per code picks the one
 * instance that polls it; the lease is renewed on its own timer, so a slow or backed-off poll
 * never loses it, and released on stop. Every success is folded into the graph (so vanished tasks
 * are noticed); every outcome is written to `upstream_status`, which all instances read.
 */
export class TaskListPoller {
  /** This process's copy of the polled codes' status (what answers report as stale). */
  readonly watch: UpstreamWatch
  private readonly codes = new Map<string, CodeState>()
  private readonly now: () => Date
  private readonly random: () => number
  private readonly leaseMs: number
  private leaseTimer: NodeJS.Timeout | undefined
  private leaseRound: Promise<void> = Promise.resolve()
  private stopped = false
  /** After how long without a success a code is stale (what `upstream.stale` tells). */
  private readonly staleMs: number

  constructor(private readonly options: PollerOptions) {
    this.now = options.now ?? (() => new Date())
    this.staleMs = options.staleMs ?? 3 * options.intervalMs
    this.random = options.random ?? Math.random
    this.leaseMs = options.leaseMs ?? Math.max(options.intervalMs, 1000)
    for (const code of options.serviceCodes)
      this.codes.set(code, { held: false, failures: 0, timer: undefined, polling: undefined })
    this.watch = new UpstreamWatch({
      db: options.db,
      serviceCodes: options.serviceCodes,
      staleMs: this.staleMs,
      refreshMs: Math.min(Math.max(options.intervalMs, 250), 5000),
      log: options.log,
      metrics: options.metrics,
      now: this.now,
    })
  }

  /** Starts taking leases (the first poll of a code as soon as its lease is held) and watching the status. */
  start(): void {
    void this.watch.start()
    const round = () => {
      this.leaseRound = this.renewLeases().finally(() => {
        if (this.stopped) return
        this.leaseTimer = setTimeout(round, this.leaseMs / 3)
        this.leaseTimer.unref()
      })
    }
    round()
  }

  /** Stops polling: requests under way are aborted, the leases given up for another instance. */
  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.leaseTimer)
    this.watch.stop()
    this.options.client.close()
    for (const state of this.codes.values()) clearTimeout(state.timer)
    await this.leaseRound
    await Promise.allSettled([...this.codes.values()].map((state) => state.polling))
    for (const [code, state] of this.codes) {
      if (!state.held) continue
      state.held = false
      this.options.metrics?.upstreamLeaseHeld.set({ service_code: code }, 0)
      await releaseLease(this.options.db, leaseName(code), this.options.instanceId).catch((error: unknown) =>
        this.options.log.warn({ err: error, serviceCode: code }, 'task_list lease could not be released'),
      )
    }
  }

  /** The service codes whose task_list is polled. */
  get serviceCodes(): readonly string[] {
    return this.options.serviceCodes
  }

  /** Whether this service code's task_list is polled at all (by this instance or another). */
  covers(serviceCode: string): boolean {
    return this.codes.has(serviceCode)
  }

  /** Whether this instance holds the lease to poll a code. */
  holds(serviceCode: string): boolean {
    return this.codes.get(serviceCode)?.held ?? false
  }

  private async renewLeases(): Promise<void> {
    const { db, instanceId, log, metrics } = this.options
    for (const [code, state] of this.codes) {
      if (this.stopped) return
      let held = false
      try {
        held = await acquireLease(db, leaseName(code), instanceId, this.leaseMs)
      } catch (error) {
        // Nothing could be stored without the database anyway; polling resumes with the lease.
        log.warn({ err: error, serviceCode: code }, 'task_list lease could not be renewed')
      }
      if (held === state.held || this.stopped) continue
      state.held = held
      metrics?.upstreamLeaseHeld.set({ service_code: code }, held ? 1 : 0)
      if (held) await this.resume(code, state)
      else {
        clearTimeout(state.timer)
        log.info({ serviceCode: code }, 'task_list of this code is polled by another instance now')
      }
    }
  }

  // A new holder goes on from where the last one stopped: its back-off and its next poll time.
  private async resume(code: string, state: CodeState): Promise<void> {
    this.options.log.info(
      { serviceCode: code, instance: this.options.instanceId },
      'polling the task_list of this code',
    )
    const row = await readUpstreamStatus(this.options.db, [code]).then(
      (rows) => rows.get(code),
      () => undefined,
    )
    state.failures = row?.consecutiveFailures ?? 0
    const wait = row?.nextPollAt ? row.nextPollAt.getTime() - this.now().getTime() : 0
    this.schedule(
      code,
      state,
      Math.min(Math.max(wait, 0), Math.max(this.options.maxBackoffMs, this.options.intervalMs)),
    )
  }

  private schedule(code: string, state: CodeState, delayMs: number): void {
    if (this.stopped || !state.held) return
    clearTimeout(state.timer)
    state.timer = setTimeout(() => {
      if (this.stopped || !state.held) return
      state.polling = this.poll(code, state)
        .then((next) => this.schedule(code, state, next))
        .finally(() => {
          state.polling = undefined
        })
    }, delayMs)
    state.timer.unref()
  }

  /** One poll of one code, its outcome stored, in a span (a trace) of its own; resolves to the wait before the next. */
  private poll(serviceCode: string, state: CodeState): Promise<number> {
    return inSpan('task_list poll', { root: true, attributes: { 'livegate.service_code': serviceCode } }, (span) =>
      this.pollOnce(serviceCode, state, (outcome) => {
        span?.setAttribute('livegate.poll.outcome', outcome)
        if (outcome !== 'ok') span?.setStatus({ code: SpanStatusCode.ERROR, message: outcome })
      }),
    )
  }

  private async pollOnce(serviceCode: string, state: CodeState, traced: (outcome: string) => void): Promise<number> {
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
      if (this.stopped) return 0
      const at = this.now()
      try {
        const changes = await foldTaskListAnswer(db, serviceCode, answer, at, this.options.sampler)
        state.failures = 0
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
      if (this.stopped) return 0
      log.warn({ serviceCode, kind, ret: failure.ret }, `task_list failed: ${failure.message}`)
    }
    observe(kind)
    metrics?.upstreamErrors.inc({ service_code: serviceCode, kind })
    state.failures++
    const delay = pollDelayMs(state.failures, intervalMs, this.options.maxBackoffMs, this.random)
    const at = this.now()
    const polled = {
      at,
      latencyMs: performance.now() - started,
      kind,
      message: failure.message,
      ret: failure.ret ?? null,
      consecutiveFailures: state.failures,
      nextPollAt: new Date(at.getTime() + delay),
    }
    await recordPollFailure(db, serviceCode, polled, this.staleMs).catch((error: unknown) =>
      log.error({ err: error, serviceCode }, 'upstream status could not be stored'),
    )
    this.watch.note(serviceCode, { lastErrorAt: at, consecutiveFailures: state.failures })
    return delay
  }
}
