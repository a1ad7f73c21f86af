import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../../config/config.schema.js'
import {
  type ActionArgs,
  argsFingerprint,
  type CloudActionArgs,
  type WebhookActionArgs,
} from '../../model/action.model.js'
import { actionByKey } from '../../storage/outbound/action.queries.js'
import { abandonPending, keyWindow, recordAction } from '../../storage/outbound/action.statements.js'
import type { ActionRow } from '../../storage/tables/action.table.js'
import type { Db } from '../../storage/database.client.js'
import type { CloudAnswer } from './action.client.js'
import { ActionClient } from './action.client.js'
import { decideRate, type RateDecision } from './action.limiter.js'
import { type ActionRequest, type Actor, type AuditSink, auditRow, endAction, recordRefusal } from './action.audit.js'
import { applyToGraph, stopEvidence } from '../graph/graph.evidence.js'
import type { Metrics } from '../metrics.registry.js'

/** An idempotency key answers the same action for this long. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 3_600_000
/** `limits.actionsPerMinute` counts in this window. */
const RATE_WINDOW_MS = 60_000

/** How {@link ActionRunner.act} ended: an action (new, or the one the idempotency key made before), or a refusal. */
export type ActOutcome =
  | { kind: 'action'; row: ActionRow }
  | { kind: 'refused'; code: 'RATE_LIMITED'; row: ActionRow | undefined }
  | { kind: 'key-reused'; row: ActionRow }

/** What a webhook action did, for the audit's `message`; a problem ends it FAILED with that text. */
export type WorkDone = { done: string } | { problem: string }

/** What {@link ActionRunner} is built from. */
export interface ActionRunnerOptions {
  db: Db
  config: Config
  log: Pick<FastifyBaseLogger, 'info' | 'warn'>
  metrics?: Pick<Metrics, 'actions'> | undefined
  /** The cloud's side; built from the config unless given. */
  client?: ActionClient
  now?: () => Date
}

/**
 * Acts: checks the key's rate, records the action in the audit, calls the cloud (within
 * `upstream.actionTimeoutMs`), and records how it ended; a stop the cloud accepted is folded into
 * its task in the same transaction. The caller has checked the permission; attempts refused for it
 * are recorded through {@link ActionRunner.refuse}, under a code the key may read only, and take a
 * slot of the same rate. Logs never carry a message's text.
 */
export class ActionRunner {
  readonly client: ActionClient
  private readonly now: () => Date
  private readonly audit: AuditSink

  constructor(private readonly options: ActionRunnerOptions) {
    const { config } = options
    this.client =
      options.client ??
      new ActionClient({
        services: config.services,
        timeoutMs: config.upstream.actionTimeoutMs,
        headerPrefix: config.ingest.signatureHeaderPrefixes[0],
      })
    this.now = options.now ?? (() => new Date())
    this.audit = { db: options.db, log: options.log, metrics: options.metrics, now: this.now }
  }

  /** Whether the service code has what acting needs (a `baseUrl` and a secret). */
  canReach(serviceCode: string): boolean {
    return this.client.canReach(serviceCode)
  }

  /** Asks for an action; see {@link ActOutcome}. */
  async act(actor: Actor, args: CloudActionArgs, request: ActionRequest): Promise<ActOutcome> {
    if (!actor.canOperate) throw new Error('ActionRunner.act: the caller must check the permission first')
    const keyScope = actor.keyName ?? ''
    const argsHash = argsFingerprint(args, request.reason)
    const now = this.now()
    const reuseAfter = new Date(now.getTime() - IDEMPOTENCY_WINDOW_MS)
    if (request.idempotencyKey) {
      // A request repeated under its key is answered without counting against the rate.
      const earlier = await actionByKey(this.options.db, keyScope, request.idempotencyKey)
      if (earlier && earlier.requestedAt >= reuseAfter)
        return earlier.argsHash === argsHash ? { kind: 'action', row: earlier } : { kind: 'key-reused', row: earlier }
    }
    // The slot is taken inside the key's turn, once no earlier request of the key was found: a
    // retry, on whichever worker and however concurrent, waits for its original and spends none.
    const rate = this.rate(keyScope, now)
    const recorded = await recordAction(
      this.options.db,
      { ...auditRow(actor, args, request, argsHash), state: 'PENDING', requestedAt: now },
      reuseAfter,
      rate.admit,
    )
    if (!recorded) return this.refuseForRate(actor, args, request, argsHash, rate.decided())
    if (!recorded.fresh) {
      // A retry that still raced its original to the insert wrote no row: only the original's slot counts.
      return recorded.row.argsHash === argsHash
        ? { kind: 'action', row: recorded.row }
        : { kind: 'key-reused', row: recorded.row }
    }
    return { kind: 'action', row: await this.send(recorded.row, args) }
  }

  /**
   * Records an attempt refused because the key may only read, and takes a slot of the key's rate
   * for it, so refusals cannot flood the audit either: the first refusal past the rate is recorded,
   * the rest only counted. `mayRecord` is false when the code it named is not one the key may read
   * (or no code livegate knows): then nothing is written anywhere a tenant could read.
   */
  async refuse(actor: Actor, args: ActionArgs, request: ActionRequest, mayRecord: boolean): Promise<void> {
    // A refusal nothing may record takes no slot: the audit, which holds the rate, never sees it.
    const recorded =
      mayRecord &&
      (await recordRefusal(
        this.audit,
        actor,
        args,
        request,
        argsFingerprint(args, request.reason),
        'FORBIDDEN',
        'The API key may only read.',
        this.rate(actor.keyName ?? '', this.now(), (rate) => rate !== 'refused').admit,
      ))
    if (!recorded) this.options.metrics?.actions.inc({ kind: args.kind, state: 'REFUSED' })
  }

  /**
   * An action on livegate's own outbox (a replay, switching an endpoint): rate limited and
   * recorded like a cloud action, PENDING while `work` runs, then SUCCEEDED with what it did or
   * FAILED with the problem it met. It carries no idempotency key: doing it again is harmless.
   */
  async perform(
    actor: Actor,
    args: WebhookActionArgs,
    request: ActionRequest,
    work: () => Promise<WorkDone>,
  ): Promise<ActOutcome> {
    if (!actor.canOperate) throw new Error('ActionRunner.perform: the caller must check the permission first')
    const argsHash = argsFingerprint(args, request.reason)
    const now = this.now()
    const rate = this.rate(actor.keyName ?? '', now)
    const recorded = await recordAction(
      this.options.db,
      { ...auditRow(actor, args, { reason: request.reason }, argsHash), state: 'PENDING', requestedAt: now },
      now,
      rate.admit,
    )
    if (!recorded) return this.refuseForRate(actor, args, request, argsHash, rate.decided())
    const { row } = recorded
    let outcome: WorkDone
    try {
      outcome = await work()
    } catch (error) {
      await endAction(this.audit, row, {
        state: 'FAILED',
        ret: null,
        message: 'livegate failed while doing it (an internal error).',
        attempts: 0,
        finishedAt: this.now(),
      })
      throw error
    }
    const ended =
      'done' in outcome
        ? { state: 'SUCCEEDED' as const, message: outcome.done }
        : { state: 'FAILED' as const, message: outcome.problem }
    return {
      kind: 'action',
      row: await endAction(this.audit, row, { ...ended, ret: null, attempts: 0, finishedAt: this.now() }),
    }
  }

  /**
   * Ends the actions a stopped process left PENDING. Another instance's calls end within
   * `upstream.actionTimeoutMs`, so only older ones (by a minute more) are taken for abandoned.
   */
  async start(): Promise<void> {
    const now = this.now()
    const abandoned = await abandonPending(
      this.options.db,
      new Date(now.getTime() - this.options.config.upstream.actionTimeoutMs - 60_000),
      now,
    )
    if (abandoned > 0)
      this.options.log.warn({ abandoned }, `actions: ${abandoned} left PENDING by a stopped process marked FAILED`)
  }

  /** Ends every cloud call under way (the gateway stops). */
  close(): void {
    this.client.close()
  }

  /**
   * The key's rate for one request at `now`: `admit` decides it inside the transaction that writes
   * its row (under the key's turn, from the audit's last minute), `decided` says what it decided.
   * An action writes its row only when allowed; a refused attempt also as the first refusal.
   */
  private rate(
    keyScope: string,
    now: Date,
    writes: (rate: RateDecision) => boolean = (rate) => rate === 'allowed',
  ): { admit: (tx: Db) => Promise<boolean>; decided: () => RateDecision } {
    let decision: RateDecision = 'refused'
    const since = new Date(now.getTime() - RATE_WINDOW_MS)
    const limit = this.options.config.limits.actionsPerMinute
    return {
      admit: async (tx) => {
        decision = decideRate(limit, await keyWindow(tx, keyScope, since))
        return writes(decision)
      },
      decided: () => decision,
    }
  }

  private async refuseForRate(
    actor: Actor,
    args: ActionArgs,
    request: ActionRequest,
    argsHash: string,
    rate: RateDecision,
  ): Promise<ActOutcome> {
    // One refusal a window is recorded: a client hammering past its limit cannot flood the audit.
    const limit = this.options.config.limits.actionsPerMinute
    const row =
      rate === 'first-refusal'
        ? await recordRefusal(
            this.audit,
            actor,
            args,
            request,
            argsHash,
            'RATE_LIMITED',
            `More than ${limit} actions a minute.`,
          )
        : undefined
    if (!row) this.options.metrics?.actions.inc({ kind: args.kind, state: 'REFUSED' })
    return { kind: 'refused', code: 'RATE_LIMITED', row }
  }

  private async send(row: ActionRow, args: CloudActionArgs): Promise<ActionRow> {
    let called: Awaited<ReturnType<ActionClient['call']>>
    try {
      called = await this.client.call(args)
    } catch (error) {
      // The client answers every cloud outcome; a throw is our own fault, and must not leave the
      // action PENDING (a retry under its key would answer PENDING until the next start).
      this.options.log.warn({ action: row.id, err: error }, `action ${row.id} (${row.kind}) failed inside livegate`)
      return endAction(this.audit, row, {
        state: 'FAILED',
        ret: null,
        message: 'livegate failed before sending it (an internal error); nothing was asked of the cloud.',
        attempts: 0,
        finishedAt: this.now(),
      })
    }
    const { answer, attempts } = called
    const succeeded = answer.kind === 'answered' && answer.ret === 0
    const outcome = {
      state: succeeded ? ('SUCCEEDED' as const) : ('FAILED' as const),
      ret: answer.kind === 'answered' ? answer.ret : null,
      message: messageOf(answer),
      attempts,
      finishedAt: this.now(),
    }
    const stop =
      succeeded && args.kind === 'STOP_TASK' ? stopEvidence(args.serviceCode, args.taskId, row.requestedAt) : undefined
    return endAction(this.audit, row, outcome, stop ? (tx) => applyToGraph(tx, [stop], outcome.finishedAt) : undefined)
  }
}

function messageOf(answer: CloudAnswer): string | null {
  if (answer.kind === 'answered')
    return answer.message ?? (answer.ret === 0 ? null : `The cloud answered ret ${answer.ret}.`)
  return answer.message
}
