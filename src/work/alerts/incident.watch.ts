import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import type { FastifyBaseLogger } from 'fastify'
import { Counter, Gauge, type Registry } from 'prom-client'
import { type AlertRule, alertRules } from '../../config/alerts.schema.js'
import type { Config } from '../../config/config.schema.js'
import { evaluateRules, type Tracks } from '../../fold/alert.evaluator.js'
import { decodeEvent } from '../../model/event.codec.js'
import { EVENT_CHANNEL, SAMPLE_CHANNEL } from '../../model/notify.channels.js'
import { unresolvedCounts, unresolvedIncidents } from '../../storage/alerts/incident.queries.js'
import { openIncident, resolveIncident } from '../../storage/alerts/incident.statements.js'
import type { Database } from '../../storage/database.client.js'
import { acquireLeases, heldLeases, releaseLeases } from '../../storage/lease.statements.js'
import type { IncidentRow } from '../../storage/tables/incident.table.js'
import type { ChannelListener } from '../channel.listener.js'
import { WakeScheduler } from '../wake.scheduler.js'
import { readSignals } from './alert.readings.js'

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
  /** Who this instance is in the rules' leases; host, pid and a random part by default. */
  instanceId?: string
}

/** The lease of one rule: its holder alone evaluates it, and while it is held the rule is configured somewhere. */
const leaseName = (rule: string) => `alerts:${rule}`

/**
 * Looks at every alert rule's condition on every sample (the samples' channel), on every change
 * of a task's state (the event channel), and once a second for what time alone decides; opens
 * and resolves incidents in the database, which holds "one open incident per rule and subject".
 *
 * Each rule is evaluated by one process at a time, the holder of its lease (`alerts:<rule>`),
 * among the workers and instances that configure it: several evaluators, each with its own
 * tracks, its own view of the rules and its own moment of reading, undo each other's
 * decisions. The holder keeps the lease while it runs, so a rule's incidents are decided by one
 * view until that process stops. An incident is resolved as "rule removed" only when no process
 * holds its rule's lease, that is, when no running instance configures the rule: an instance
 * that never had a rule (the older one of a rolling deploy) leaves its incidents to those that
 * have it. How long each condition has held lives in the holder: a new holder starts each `for`
 * anew, and the open incidents it finds go on as the same incidents.
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
  private startedAt = 0
  private readonly instanceId: string
  private readonly leaseMs: number
  /** The rules whose lease this process holds, as of its last renewal. */
  private held = new Set<string>()
  private renewedAt = Number.NEGATIVE_INFINITY

  constructor(private readonly options: IncidentWatchOptions) {
    this.rules = alertRules(options.config.alerts)
    this.now = options.now ?? (() => new Date())
    this.tickMs = options.tickMs ?? 1000
    this.instanceId = options.instanceId ?? `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`
    // Renewed every third of it by the passes (at least one a tick): a pass must stall that long to lose one.
    this.leaseMs = Math.max(10 * this.tickMs, 10_000)
    // Never two passes at once; a sample or change during one asks for one more after it; the
    // tick after every pass is what time alone decides (a `for` that runs out between samples).
    this.scheduler = new WakeScheduler({
      run: () => this.run(),
      onError: (error) => {
        options.log.warn({ err: error }, 'alerts: a pass failed; looking again at the next sample or tick')
        return this.tickMs
      },
    })
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
    // Without rules only removed rules' incidents are looked at: their last holder may stop at any time.
    if (this.rules.length === 0) return this.scheduler.wakeIn(this.leaseMs / 3)
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
    // Given up at once, so another worker or instance takes the rules over without waiting for them to expire.
    const held = [...this.held].map(leaseName)
    this.held = new Set()
    await releaseLeases(this.options.database.db, held, this.instanceId).catch((error: unknown) => {
      this.options.log.warn({ err: error }, 'alerts: the rules could not be handed over; they are when they expire')
    })
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
    // Without rules nothing but a removed rule's incidents is looked at, as often as a lease may expire.
    return { within: this.rules.length > 0 ? this.tickMs : this.leaseMs / 3 }
  }

  /** The rules this process holds the lease of, renewed (or taken, once expired) every third of a lease. */
  private async hold(at: number): Promise<Set<string>> {
    if (this.rules.length === 0) return this.held
    if (at - this.renewedAt < this.leaseMs / 3) return this.held
    const names = this.rules.map((rule) => leaseName(rule.name))
    try {
      const taken = await acquireLeases(this.options.database.db, names, this.instanceId, this.leaseMs)
      this.held = new Set(this.rules.filter((rule) => taken.has(leaseName(rule.name))).map((rule) => rule.name))
      this.renewedAt = at
    } catch (error) {
      // Not known to be held any more: another process may take the rules once their leases run out.
      this.held = new Set()
      this.renewedAt = Number.NEGATIVE_INFINITY
      throw error
    }
    return this.held
  }

  private async pass(): Promise<void> {
    const db = this.options.database.db
    const held = this.stopped ? this.held : await this.hold(performance.now())
    const unresolved = await unresolvedIncidents(db)
    const configured = new Set(this.rules.map((rule) => rule.name))
    // A rule this process does not configure belongs to another instance while anyone holds its lease.
    const others = [...new Set(unresolved.filter((row) => !configured.has(row.rule)).map((row) => row.rule))]
    const elsewhere = await heldLeases(db, others.map(leaseName))
    const mine = unresolved.filter((row) =>
      configured.has(row.rule) ? held.has(row.rule) : !elsewhere.has(leaseName(row.rule)),
    )
    if (held.size === 0 && mine.length === 0) return
    const now = this.now()
    const rules = this.rules.filter((rule) => held.has(rule.name))
    const readings =
      rules.length > 0
        ? await readSignals({ ...this.options, rules }, now, this.startedAt)
        : { tasks: [], services: [] }
    const open = mine.map((row) => ({
      id: row.id,
      rule: row.rule,
      serviceCode: row.serviceCode,
      taskId: row.taskId,
    }))
    const decided = evaluateRules(rules, readings, open, this.tracks, now.getTime())
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
}
