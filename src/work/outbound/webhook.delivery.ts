import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import type { WebhookEndpointConfig } from '../../config/webhook.schema.js'
import { retryAfterMs, retryDelayMs } from '../../model/webhook.event.js'
import type { Db } from '../../storage/database.client.js'
import type { AttemptOutcome, ClaimedDelivery } from '../../storage/outbound/webhook.attempts.js'
import { claimDeliveries, releaseClaims } from '../../storage/outbound/webhook.attempts.js'
import { disableEndpoint, endpointFailed, endpointSucceeded } from '../../storage/outbound/webhook.statements.js'
import type { OutcomeRecorder } from './webhook.outcomes.js'
import type { WebhookMetrics } from './webhook.metrics.js'
import { type RunVerdict, WakeScheduler } from '../wake.scheduler.js'
import { EndpointPoster, networkError, splitCredentials, WebhookSigner } from './webhook.sender.js'

const SUCCESS_NOTE_MS = 1000

/** What an {@link EndpointDelivery} is built from. */
export interface DeliveryOptions {
  db: Db
  endpoint: WebhookEndpointConfig
  /** Who holds a claimed delivery: unique per process and start. */
  owner: string
  /** Stores outcomes for every endpoint of the process, in batches (its owner is `owner`). */
  recorder: OutcomeRecorder
  timeoutMs: number
  retrySchedule: readonly number[]
  disableAfterMs: number
  concurrency: number
  log: Pick<FastifyBaseLogger, 'warn' | 'info' | 'error'>
  metrics: WebhookMetrics
  /** The longest wait between two looks for due deliveries when nothing woke the worker. */
  idleMs?: number
}

/** A unique owner name for this process's claims. */
export function deliveryOwner(): string {
  return `${process.pid}:${randomUUID()}`
}

// The soonest a timer wakes the worker: a retry due now is claimed in one look, not one per retry.
const MIN_WAKE_MS = 10

/**
 * Delivers one endpoint's deliveries: claims those due (at most `concurrency` in flight), signs
 * each per Standard Webhooks with the event's id as `webhook-id`, POSTs it over keep-alive, and
 * stores the outcome. Each endpoint has its own worker and its own in-flight budget, so a slow
 * one never holds up another. The lease on a claim outlasts the attempt's timeout, so only a
 * killed process's claim is ever taken over.
 */
export class EndpointDelivery {
  private readonly signer: WebhookSigner
  private readonly poster: EndpointPoster
  private readonly leaseMs: number
  private inFlight = 0
  /** Claimed ahead, waiting for a free slot: a claim serves a batch, not the last few slots freed. */
  private readonly queued: ClaimedDelivery[] = []
  private readonly scheduler: WakeScheduler
  private readonly attempts = new Set<Promise<void>>()
  private failingLogged = false
  private readonly stopping = new AbortController()
  /** When this process last stored a success on the endpoint's row, and whether it saw a failure since. */
  private successNotedAt = 0
  private failedSinceNoted = true

  private readonly target: { url: string; authorization: Record<string, string> }

  constructor(private readonly options: DeliveryOptions) {
    this.signer = new WebhookSigner(options.endpoint.secret)
    // An attempt's timeout for its own, and two for the slots it may wait on (claimed ahead).
    this.leaseMs = options.timeoutMs * 3 + 5000
    this.target = splitCredentials(options.endpoint.url)
    this.poster = new EndpointPoster(this.target.url, options.concurrency)
    this.scheduler = new WakeScheduler({ run: () => this.look() })
  }

  start(): void {
    this.scheduler.restart()
    this.wake()
  }

  /** Stops claiming and waits for the attempts under way. */
  async stop(): Promise<void> {
    // Attempts under way are cut, not waited for: a hanging endpoint must not hold up a shutdown.
    this.stopping.abort()
    this.poster.cut(this.stopping.signal.reason as Error)
    await this.scheduler.stop()
    await Promise.allSettled([...this.attempts])
    // Claimed ahead but never tried: handed back now rather than held until their lease runs out.
    const unsent = this.queued.splice(0).map((delivery) => delivery.id)
    const { db, owner, log, endpoint } = this.options
    try {
      await releaseClaims(db, owner, unsent)
    } catch (error) {
      log.warn({ err: error, endpoint: endpoint.name }, 'webhooks: claims left to their lease')
    }
    this.poster.close()
  }

  /** Forgets what was claimed ahead: the endpoint was switched off, so those rows are dead letters now. */
  dropClaimedAhead(): void {
    this.queued.length = 0
  }

  /** Looks for due deliveries now (a new one was put in line, or replayed). */
  wake(): void {
    this.scheduler.wake()
  }

  /**
   * Claims due deliveries while there is room, up to twice `concurrency` ahead of those in flight
   * (the lease, three times an attempt's timeout, covers the wait for a slot and the attempt):
   * once more at once after a full batch. Then it
   * waits for a wake (a delivery put in line, a replay, an attempt ending with room for a batch),
   * for a retry this process scheduled, or at most `idleMs`: what another process scheduled, or
   * a lease that ran out, is found then.
   */
  private async look(): Promise<RunVerdict | undefined> {
    const { db, endpoint, owner, concurrency } = this.options
    const within = Math.max(MIN_WAKE_MS, this.options.idleMs ?? 1000)
    const room = 3 * concurrency - this.inFlight - this.queued.length
    // A batch still waits: the attempts wake the worker as they take it (a claim is a batch, never a few rows).
    if (this.queued.length > concurrency || this.stopping.signal.aborted) return undefined
    try {
      const claimed = await claimDeliveries(db, endpoint.name, owner, this.leaseMs, room)
      this.queued.push(...claimed)
      this.pump()
      this.failingLogged = false
      return { again: claimed.length === room, within }
    } catch (error) {
      if (!this.failingLogged)
        this.options.log.warn(
          { err: error, endpoint: endpoint.name },
          'webhooks: cannot read the deliveries; looking again',
        )
      this.failingLogged = true
      return { within }
    }
  }

  /** Makes sure the worker looks again within `ms`. */
  private wakeIn(ms: number): void {
    this.scheduler.wakeIn(Math.max(MIN_WAKE_MS, ms))
  }

  /** Starts queued deliveries while a slot is free. */
  private pump(): void {
    while (this.inFlight < this.options.concurrency && !this.stopping.signal.aborted) {
      const next = this.queued.shift()
      if (!next) return
      this.launch(next)
    }
  }

  private launch(delivery: ClaimedDelivery): void {
    this.inFlight += 1
    let freed = false
    // A slot is free once the answer is in: its outcome is stored with others', the lease holding it meanwhile.
    const free = () => {
      if (freed) return
      freed = true
      this.inFlight -= 1
      this.pump()
      // Claimed in batches, once a batch's room is free, while a batch still waits: no slot idles on a claim.
      if (this.queued.length <= this.options.concurrency) this.wake()
    }
    const attempt = this.attempt(delivery, free)
      .catch((error: unknown) =>
        this.options.log.error(
          { err: error, endpoint: this.options.endpoint.name, eventId: delivery.eventId },
          'webhooks: an attempt could not be recorded; its lease will run out and it will be tried again',
        ),
      )
      .finally(() => {
        free()
        this.attempts.delete(attempt)
      })
    this.attempts.add(attempt)
  }

  private async attempt(delivery: ClaimedDelivery, free: () => void): Promise<void> {
    const { endpoint, timeoutMs, metrics, log } = this.options
    const sentAt = new Date()
    let outcome: AttemptOutcome
    let gone = false
    let cut = false
    try {
      const seconds = Math.floor(sentAt.getTime() / 1000)
      const headers = {
        ...this.target.authorization,
        'content-type': 'application/json',
        'user-agent': 'livegate-webhooks',
        'webhook-id': delivery.eventId,
        'webhook-timestamp': String(seconds),
        'webhook-signature': this.signer.sign(delivery.eventId, seconds, delivery.body),
      }
      const response = await this.poster.post(headers, delivery.body, timeoutMs, this.stopping.signal)
      const status = response.status
      if (status >= 200 && status < 300) outcome = { kind: 'delivered', statusCode: status }
      else if (status === 410) {
        gone = true
        outcome = { kind: 'dead', statusCode: status, error: 'HTTP 410 Gone: the endpoint asked to be switched off' }
      } else {
        const asked = status === 429 || status === 503 ? retryAfterMs(response.retryAfter, Date.now()) : undefined
        outcome = this.failed(delivery, status, `HTTP ${status}`, asked)
      }
    } catch (error) {
      // Cut by a shutdown: in line again at once, for whichever process is running.
      cut = this.stopping.signal.aborted
      outcome = cut
        ? { kind: 'retry', statusCode: null, error: 'cut short: the gateway was stopping', delayMs: 0 }
        : this.failed(delivery, null, networkError(error, timeoutMs))
    }
    // 410: the endpoint goes off, and what was claimed ahead for it with it.
    if (gone) this.dropClaimedAhead()
    free()
    const recorded = await this.options.recorder.record(delivery.id, outcome, delivery.claimedAt + this.leaseMs - 1000)
    if (outcome.kind === 'retry' && recorded) this.wakeIn(outcome.delayMs)
    metrics.attempts.inc({ endpoint: endpoint.name, outcome: outcome.kind })
    if (cut) return // no fault of the endpoint's: nothing to log or note on it
    if (outcome.kind === 'delivered' && recorded)
      metrics.deliverySeconds.observe({ endpoint: endpoint.name }, (Date.now() - delivery.createdAt.getTime()) / 1000)
    if (outcome.kind !== 'delivered') {
      const next =
        outcome.kind === 'retry' ? `retrying in ${Math.round(outcome.delayMs / 100) / 10} s` : 'a dead letter now'
      log.warn(
        {
          endpoint: endpoint.name,
          eventId: delivery.eventId,
          attempt: delivery.attempts,
          statusCode: outcome.statusCode,
          error: outcome.error,
        },
        `webhooks: attempt ${delivery.attempts} to ${endpoint.name} failed (${outcome.error}); ${next}`,
      )
    }
    // The endpoint's state is a summary: one that cannot be stored now is stored by a later attempt.
    await this.noteOnEndpoint(outcome, gone).catch((error: unknown) =>
      log.warn({ err: error, endpoint: endpoint.name }, "webhooks: the endpoint's state could not be stored"),
    )
  }

  private async noteOnEndpoint(outcome: AttemptOutcome, gone: boolean): Promise<void> {
    const { endpoint, log, db } = this.options
    if (outcome.kind === 'delivered') {
      // The endpoint's row is one for every delivery to it: a success is stored at once after a
      // failure, else at most once a second, so a busy endpoint's deliveries do not queue on it.
      if (this.failedSinceNoted || Date.now() - this.successNotedAt >= SUCCESS_NOTE_MS) {
        this.failedSinceNoted = false
        this.successNotedAt = Date.now()
        await endpointSucceeded(db, endpoint.name)
      }
      return
    }
    this.failedSinceNoted = true
    if (gone) {
      if (await disableEndpoint(db, endpoint.name, 'answered 410 Gone'))
        log.warn(
          { endpoint: endpoint.name },
          `webhooks: endpoint ${endpoint.name} answered 410 Gone and is switched off; what was meant for it is ` +
            `kept as dead letters`,
        )
      return
    }
    if (await endpointFailed(db, endpoint.name, outcome.error, this.options.disableAfterMs)) {
      this.dropClaimedAhead()
      log.warn(
        { endpoint: endpoint.name },
        `webhooks: endpoint ${endpoint.name} failed every attempt for disableAfter and is switched off; what was ` +
          `meant for it is kept as dead letters`,
      )
    }
  }

  private failed(
    delivery: ClaimedDelivery,
    statusCode: number | null,
    error: string,
    askedMs?: number,
  ): AttemptOutcome {
    const scheduled = retryDelayMs(this.options.retrySchedule, delivery.attempts, Math.random())
    if (scheduled === undefined) return { kind: 'dead', statusCode, error }
    return { kind: 'retry', statusCode, error, delayMs: askedMs ?? scheduled }
  }
}
