import type { FastifyBaseLogger } from 'fastify'
import type { Registry } from 'prom-client'
import type { Config } from '../../config/config.schema.js'
import type { WebhookEndpointConfig } from '../../config/webhook.schema.js'
import { endpointVisible } from '../../model/webhook.event.js'
import type { Database } from '../../storage/database.client.js'
import {
  countDeliveries,
  deliveryPage,
  type EndpointStateRow,
  endpointStates,
} from '../../storage/outbound/webhook.queries.js'
import {
  disableEndpoint,
  enableEndpoint,
  ensureEndpoints,
  type Redelivered,
  redeliver,
} from '../../storage/outbound/webhook.statements.js'
import { forgetCheckpoints } from '../../storage/log.kernel.js'
import { notifyOnChannel } from '../../storage/notify.statements.js'
import { WEBHOOK_CHANNEL } from '../../model/notify.channels.js'
import type { ChannelListener } from '../channel.listener.js'
import { pruneDeliveries } from '../retention.job.js'
import type { DeliveryStatus, WebhookDeliveryRow } from '../../storage/tables/webhook.table.js'
import { deliveryOwner, EndpointDelivery } from './webhook.delivery.js'
import { OutcomeRecorder } from './webhook.outcomes.js'
import { WakeScheduler } from '../wake.scheduler.js'
import {
  WEBHOOK_CALLBACKS_CHECKPOINT,
  WEBHOOK_EVENTS_CHECKPOINT,
  WebhookEnqueuer,
  type WebhookShapes,
} from './webhook.enqueuer.js'
import { type WebhookMetrics, webhookMetrics } from './webhook.metrics.js'

const GAUGE_REFRESH_MS = 5000
/** Most deliveries one replay puts back in line; a larger replay is several calls. */
export const MAX_REDELIVERED_PER_CALL = 10_000
// The webhook channel's payloads besides the enqueuer's: something is due, or `off:<endpoint>`.
const DUE = 'due'
const OFF = 'off:'

/** What {@link WebhookService} is built from. */
export interface WebhookServiceOptions {
  config: Pick<Config, 'webhooks' | 'retention'>
  database: Database
  /** The process's listener: the log's doorbell and other instances' new deliveries wake the work. */
  channels: Pick<ChannelListener, 'on'>
  log: Pick<FastifyBaseLogger, 'warn' | 'info' | 'error' | 'debug'>
  registry: Registry
  shapes: WebhookShapes
  /**
   * Whether this process puts events in line and delivers them (the default). Off in the HTTP
   * workers of `serve --workers N`, whose webhook worker does it for all of them: delivery then never
   * shares a turn of the event loop with the callback route. Reads and an operator's steering work either way.
   */
  deliver?: boolean
}

/** A configured endpoint with its stored state. */
export interface EndpointView extends WebhookEndpointConfig {
  state: EndpointStateRow | undefined
}

/**
 * Webhooks in one process: the enqueuer (log to outbox), one delivery worker per endpoint, and
 * what GraphQL reads and steers (the retention job prunes delivered records and dead letters). With no
 * endpoint configured nothing runs, and the enqueuer's checkpoints are forgotten, so endpoints
 * configured later receive events from then on rather than the whole log.
 */
export class WebhookService {
  private readonly endpoints: readonly WebhookEndpointConfig[]
  private readonly enqueuer: WebhookEnqueuer
  private readonly workers = new Map<string, EndpointDelivery>()
  private readonly metrics: WebhookMetrics
  private readonly recorder: OutcomeRecorder
  private off: (() => void) | undefined
  private readonly gauges = new WakeScheduler({
    run: async () => {
      await this.refreshGauges()
      return { within: GAUGE_REFRESH_MS }
    },
  })

  constructor(private readonly options: WebhookServiceOptions) {
    const { webhooks } = options.config
    this.endpoints = webhooks.endpoints
    this.metrics = webhookMetrics(options.registry)
    const owner = deliveryOwner()
    this.recorder = new OutcomeRecorder(options.database.db, owner)
    // Only a delivering process holds a worker (and its connections) per endpoint.
    for (const endpoint of options.deliver === false ? [] : this.endpoints) {
      this.workers.set(
        endpoint.name,
        new EndpointDelivery({
          db: options.database.db,
          endpoint,
          owner,
          recorder: this.recorder,
          timeoutMs: webhooks.timeoutMs,
          retrySchedule: webhooks.retrySchedule,
          disableAfterMs: webhooks.disableAfter,
          concurrency: webhooks.concurrency,
          log: options.log,
          metrics: this.metrics,
        }),
      )
    }
    this.enqueuer = new WebhookEnqueuer({
      database: options.database,
      channels: options.channels,
      endpoints: this.endpoints,
      shapes: options.shapes,
      log: options.log,
      onEnqueued: () => this.wakeAll(),
    })
  }

  /** Whether any endpoint is configured. */
  get active(): boolean {
    return this.endpoints.length > 0
  }

  /** Whether this process puts events in line and delivers them. */
  get delivers(): boolean {
    return this.active && this.options.deliver !== false
  }

  async start(): Promise<void> {
    if (!this.active) {
      await forgetCheckpoints(this.options.database.db, [WEBHOOK_CALLBACKS_CHECKPOINT, WEBHOOK_EVENTS_CHECKPOINT])
      return
    }
    await ensureEndpoints(
      this.options.database.db,
      this.endpoints.map((endpoint) => endpoint.name),
    )
    await this.enqueuer.setStart()
    if (!this.delivers) return
    // Another instance's enqueuer, replay or switch puts deliveries in line or takes them out: its NOTIFY tells.
    this.off = this.options.channels.on(WEBHOOK_CHANNEL, (payload) => this.heard(payload))
    await this.enqueuer.start()
    for (const worker of this.workers.values()) worker.start()
    this.gauges.restart()
    this.gauges.wakeIn(GAUGE_REFRESH_MS)
  }

  async stop(): Promise<void> {
    // Not awaited: a refresh under way only reads, and its failure is caught.
    void this.gauges.stop()
    this.off?.()
    if (!this.delivers) return
    await this.enqueuer.stop()
    await Promise.all([...this.workers.values()].map((worker) => worker.stop()))
    await this.recorder.stop()
  }

  /** Puts in line every event final so far (tests wait on it). */
  async settle(): Promise<void> {
    if (this.delivers) await this.enqueuer.catchUp()
  }

  /** The configured endpoints a caller reading these codes (undefined: all) may see, with their state. */
  async visibleEndpoints(allowed: readonly string[] | undefined): Promise<EndpointView[]> {
    const visible = this.endpoints.filter((endpoint) => endpointVisible(endpoint, allowed))
    const states = await endpointStates(
      this.options.database.db,
      visible.map((endpoint) => endpoint.name),
    )
    return visible.map((endpoint) => ({ ...endpoint, state: states.get(endpoint.name) }))
  }

  /** One visible endpoint by name, or undefined (unknown, or out of the caller's scope). */
  async visibleEndpoint(name: string, allowed: readonly string[] | undefined): Promise<EndpointView | undefined> {
    const endpoint = this.endpoints.find((candidate) => candidate.name === name)
    if (!endpoint || !endpointVisible(endpoint, allowed)) return undefined
    const states = await endpointStates(this.options.database.db, [name])
    return { ...endpoint, state: states.get(name) }
  }

  /** A page of an endpoint's deliveries, newest first. */
  deliveries(
    name: string,
    page: { status?: DeliveryStatus | undefined; beforeId?: number | undefined; limit: number },
  ): Promise<WebhookDeliveryRow[]> {
    return deliveryPage(this.options.database.db, name, page)
  }

  /** How many deliveries an endpoint has, of one status or all. */
  countDeliveries(name: string, status?: DeliveryStatus): Promise<number> {
    return countDeliveries(this.options.database.db, name, status)
  }

  /** Puts dead letters or delivered events back in line; answers how many. */
  async redeliver(
    name: string,
    which: { eventIds?: readonly string[] | undefined; since?: Date | undefined },
  ): Promise<Redelivered> {
    const done = await redeliver(this.options.database.db, name, which, MAX_REDELIVERED_PER_CALL)
    if ('count' in done && done.count > 0) await this.tell(DUE)
    return done
  }

  /** Switches an endpoint on or off, as an operator asked. */
  async setEnabled(name: string, enabled: boolean, by: string): Promise<void> {
    const { db } = this.options.database
    if (enabled) {
      await enableEndpoint(db, name)
      await this.tell(DUE)
    } else {
      await disableEndpoint(db, name, `switched off by ${by}`)
      await this.tell(`${OFF}${name}`)
    }
    this.options.log.info(
      { endpoint: name, enabled, by },
      `webhooks: endpoint ${name} switched ${enabled ? 'on' : 'off'} by ${by}`,
    )
  }

  /** Drops delivered records and dead letters past their retention now (the retention job does it on schedule). */
  pruneOnce(now = new Date()): Promise<number> {
    const { webhooks, retention } = this.options.config
    return pruneDeliveries(
      { db: this.options.database.db, retention, log: this.options.log },
      webhooks.deliveredRetention,
      now,
    )
  }

  private wakeAll(): void {
    for (const worker of this.workers.values()) worker.wake()
  }

  /**
   * Tells every delivering process (this one, the webhook worker of `serve --workers N`, other
   * instances) at once rather than at their next look: a replay is due, or an endpoint is off.
   */
  private async tell(payload: string): Promise<void> {
    this.heard(payload)
    await this.options.database.db.execute(notifyOnChannel(WEBHOOK_CHANNEL, payload)).catch((error: unknown) => {
      this.options.log.warn({ err: error }, 'webhooks: other processes will see the change at their next look')
    })
  }

  private heard(payload: string): void {
    if (!this.delivers) return
    if (payload.startsWith(OFF)) this.workers.get(payload.slice(OFF.length))?.dropClaimedAhead()
    else this.wakeAll()
  }

  private async refreshGauges(): Promise<void> {
    try {
      const states = await endpointStates(
        this.options.database.db,
        this.endpoints.map((endpoint) => endpoint.name),
      )
      for (const [name, state] of states) {
        this.metrics.pending.set({ endpoint: name }, state.pending)
        this.metrics.deadLetters.set({ endpoint: name }, state.deadLetters)
        this.metrics.disabled.set({ endpoint: name }, state.enabled ? 0 : 1)
      }
    } catch {
      // The database is away: the gauges keep their last values until it answers again.
    }
  }
}
