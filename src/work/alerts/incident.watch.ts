import type { FastifyBaseLogger } from 'fastify'
import { Counter, Gauge, type Registry } from 'prom-client'
import { type AlertRule, alertRules } from '../../config/alerts.schema.js'
import type { Config } from '../../config/config.schema.js'
import {
  evaluateRules,
  type Readings,
  type ServiceReading,
  type TaskReading,
  type Tracks,
} from '../../fold/alert.evaluator.js'
import { taskHealth } from '../../fold/task.health.js'
import { decodeEvent } from '../../model/event.codec.js'
import { EVENT_CHANNEL, SAMPLE_CHANNEL } from '../../model/notify.channels.js'
import { unresolvedCounts, unresolvedIncidents } from '../../storage/alerts/incident.queries.js'
import { openIncident, resolveIncident } from '../../storage/alerts/incident.statements.js'
import { missingCallbacksByCode, taskSignals } from '../../storage/alerts/signal.queries.js'
import type { Database } from '../../storage/database.client.js'
import { judgeUpstream, readUpstreamStatus, staleAfterMs } from '../../storage/history/upstream-status.statements.js'
import type { IncidentRow } from '../../storage/tables/incident.table.js'
import type { ChannelListener } from '../channel.listener.js'
import { WakeScheduler } from '../wake.scheduler.js'

/** What {@link IncidentWatch} is built from. */
export interface IncidentWatchOptions {
  config: Pick<Config, 'alerts' | 'services' | 'upstream'>
  database: Database
  /** The process's one listener: a sample or a task's change wakes a pass. */
  channels: Pick<ChannelListener, 'on'>
  log: Pick<FastifyBaseLogger, 'info' | 'warn'>
  registry: Registry
  now?: (() => Date) | undefined
  /** The pass for what time alone decides; 1 s by default. */
  tickMs?: number
}

// What the reconciliation's count of forgotten callbacks looks back over.
const HOUR = 3_600_000

/**
 * Looks at every alert rule's condition on every sample (the samples' channel), on every change
 * of a task's state (the event channel), and once a second for what time alone decides; opens
 * and resolves incidents in the database, which holds "one open incident per rule and subject",
 * so every instance and worker may look and each change is told once. How long each condition
 * has held lives in this process: a restart starts each `for` anew, and the open incidents it
 * finds go on as the same incidents.
 */
export class IncidentWatch {
  private readonly rules: AlertRule[]
  private tracks: Tracks = new Map()
  private off: Array<() => void> = []
  private readonly scheduler: WakeScheduler
  /** Who waits in {@link evaluate} for the next pass to begin and end. */
  private waiting: Array<{ resolve: () => void; reject: (error: unknown) => void }> = []
  private stopped = false
  private readonly tickMs: number
  private readonly now: () => Date
  private readonly total: Counter<'rule' | 'severity'>
  private readonly staleMs: number
  private startedAt = 0

  constructor(private readonly options: IncidentWatchOptions) {
    this.rules = alertRules(options.config.alerts)
    this.now = options.now ?? (() => new Date())
    this.tickMs = options.tickMs ?? 1000
    // Never two passes at once; a sample or change during one asks for one more after it; the
    // tick after every pass is what time alone decides (a `for` that runs out between samples).
    this.scheduler = new WakeScheduler({
      run: () => this.run(),
      onError: (error) => {
        options.log.warn({ err: error }, 'alerts: a pass failed; looking again at the next sample or tick')
        return this.tickMs
      },
    })
    this.staleMs = staleAfterMs(options.config.upstream)
    const registers = [options.registry]
    // Every instance reads the same stored incidents: the whole is not the workers' sum.
    // Read at each scrape, not left from this process's last pass: another instance may have opened one since.
    const database = options.database
    new Gauge({
      name: 'livegate_incidents_open',
      help: 'Incidents not resolved, by rule and severity.',
      labelNames: ['rule', 'severity'],
      aggregator: 'max',
      registers,
      async collect() {
        // A database that cannot answer keeps the last counts: /metrics must answer through an outage.
        const counts = await unresolvedCounts(database.db).catch(() => undefined)
        if (!counts) return
        this.reset()
        for (const count of counts) this.set({ rule: count.rule, severity: count.severity }, count.n)
      },
    })
    this.total = new Counter({
      name: 'livegate_incidents_total',
      help: 'Incidents opened, by rule and severity.',
      labelNames: ['rule', 'severity'],
      registers,
    })
  }

  /** One pass now (a removed rule's incidents resolve here), then on every sample, change and tick. */
  async start(): Promise<void> {
    this.startedAt = this.now().getTime()
    await this.pass()
    if (this.rules.length === 0) return
    const { channels } = this.options
    const wake = () => this.scheduler.wake()
    this.off.push(channels.on(SAMPLE_CHANNEL, wake))
    // Heard again after a deaf spell: what changed meanwhile is looked at now.
    this.off.push(channels.on(EVENT_CHANNEL, (payload) => decodeEvent(payload)?.kind === 'task' && wake(), wake))
    this.scheduler.wakeIn(this.tickMs)
  }

  async stop(): Promise<void> {
    this.stopped = true
    const stopped = this.scheduler.stop()
    for (const off of this.off.splice(0)) off()
    await stopped
    // A wait the scheduler will no longer answer: one pass of its own.
    for (const waiter of this.waiting.splice(0)) await this.pass().then(waiter.resolve, waiter.reject)
  }

  /** Resolves once a pass that began after this call has ended: what tests wait on. */
  async evaluate(): Promise<void> {
    if (this.stopped) return this.pass()
    const done = new Promise<void>((resolve, reject) => this.waiting.push({ resolve, reject }))
    this.scheduler.wake()
    return done
  }

  // One pass of the scheduler's: it answers those waiting since before it began.
  private async run(): Promise<{ within?: number }> {
    const waiters = this.waiting.splice(0)
    try {
      await this.pass()
    } catch (error) {
      for (const waiter of waiters) waiter.reject(error)
      throw error
    }
    for (const waiter of waiters) waiter.resolve()
    // Without rules nothing but a removed rule's incidents is looked at, and that once, at the start.
    return this.rules.length > 0 ? { within: this.tickMs } : {}
  }

  private async pass(): Promise<void> {
    const db = this.options.database.db
    const unresolved = await unresolvedIncidents(db)
    if (this.rules.length === 0 && unresolved.length === 0) return
    const now = this.now()
    const readings = this.rules.length > 0 ? await this.read(now) : { tasks: [], services: [] }
    const open = unresolved.map((row) => ({
      id: row.id,
      rule: row.rule,
      serviceCode: row.serviceCode,
      taskId: row.taskId,
    }))
    const decided = evaluateRules(this.rules, readings, open, this.tracks, now.getTime())
    this.tracks = decided.tracks
    for (const opening of decided.opens) {
      const row = await openIncident(db, {
        rule: opening.rule.name,
        severity: opening.rule.severity,
        state: 'OPEN',
        serviceCode: opening.serviceCode,
        taskId: opening.taskId,
        signal: opening.rule.when,
        summary: opening.summary,
        value: opening.value,
        threshold: opening.threshold,
        startedAt: new Date(opening.startedAt),
        openedAt: now,
      })
      // Undefined: another instance or worker opened it first, and told it.
      if (!row) continue
      this.total.inc({ rule: row.rule, severity: row.severity })
      this.said('opened', row)
    }
    for (const resolving of decided.resolves) {
      const row = await resolveIncident(db, resolving.id, now, resolving.reason)
      if (row) this.said('resolved', row, resolving.summary)
    }
  }

  private said(change: string, row: IncidentRow, why?: string): void {
    this.options.log.info(
      {
        incident: row.id,
        rule: row.rule,
        severity: row.severity,
        serviceCode: row.serviceCode,
        taskId: row.taskId,
        ...(why ? { why } : {}),
      },
      `incident ${change}: ${row.summary}`,
    )
  }

  private async read(now: Date): Promise<Readings> {
    const db = this.options.database.db
    const { services, upstream } = this.options.config
    const configured = services.map((service) => service.serviceCode)
    const named = this.rules.flatMap((rule) => (rule.serviceCodes === '*' ? configured : rule.serviceCodes))
    const codes = [...new Set([...configured, ...named])]
    // The codes whose task list is polled: only they can go stale (as `upstream(code).stale` says).
    const polled =
      upstream.pollIntervalMs > 0
        ? services
            .filter((service) => service.baseUrl && service.secrets.length > 0)
            .map((service) => service.serviceCode)
        : []
    const [rows, missing, statuses] = await Promise.all([
      taskSignals(db, codes),
      missingCallbacksByCode(db, new Date(now.getTime() - HOUR)),
      readUpstreamStatus(db, polled),
    ])
    // A code never answered is stale only once this process has waited as long as a stale list: a start is no fault.
    const waited = now.getTime() - this.startedAt >= this.staleMs
    const stale = new Set(
      polled.filter(
        (code) =>
          judgeUpstream(statuses.get(code), now, this.staleMs).stale && (waited || statuses.get(code)?.lastSuccessAt),
      ),
    )
    const tasks: TaskReading[] = rows.map((row) => {
      const view = taskHealth({
        status: row.status,
        listed: row.listed,
        endedAt: null,
        waitingSince: null,
        sampled: row.sampled ? { health: row.sampled.health, since: row.sampled.since.getTime() } : undefined,
        stale: stale.has(row.serviceCode),
      })
      return {
        serviceCode: row.serviceCode,
        taskId: row.taskId,
        health: view.state,
        healthSince: view.since,
        viewers: row.viewers,
        inputBitrate: row.inputBitrate,
      }
    })
    const readings: ServiceReading[] = codes.map((serviceCode) => {
      const lastSuccess = statuses.get(serviceCode)?.lastSuccessAt?.getTime()
      // A code's audience is known from a fresh task list answer only: none yet, or a stale one, says nothing.
      const answered = lastSuccess !== undefined && !stale.has(serviceCode)
      return {
        serviceCode,
        viewers: answered
          ? tasks.reduce((sum, task) => sum + (task.serviceCode === serviceCode ? (task.viewers ?? 0) : 0), 0)
          : null,
        stale: stale.has(serviceCode),
        staleSince: stale.has(serviceCode) ? (lastSuccess ?? this.startedAt) + this.staleMs : null,
        callbacksMissing: missing.get(serviceCode) ?? 0,
      }
    })
    return { tasks, services: readings }
  }
}
