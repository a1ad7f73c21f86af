import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../../config/config.schema.js'
import { type ActionArgs, argsFingerprint } from '../../model/action.model.js'
import { actionByKey } from '../../storage/outbound/action.queries.js'
import { abandonPending, finishAction, recordAction } from '../../storage/outbound/action.statements.js'
import type { ActionRow } from '../../storage/tables/action.table.js'
import type { Db } from '../../storage/database.client.js'
import type { CloudAnswer } from './action.client.js'
import { ActionClient } from './action.client.js'
import { RateLimiter } from './action.limiter.js'
import { applyToGraph, stopEvidence } from '../graph/graph.evidence.js'
import type { Metrics } from '../metrics.registry.js'

/** An idempotency key answers the same action for this long. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 3_600_000

/** Who asks: the API key's name (none for the local user) and whether it may act. */
export interface Actor {
  keyName: string | undefined
  canOperate: boolean
}

/** What an operator added to the request. */
export interface ActionRequest {
  reason?: string | null | undefined
  idempotencyKey?: string | null | undefined
}

/** How {@link ActionRunner.act} ended: an action (new, or the one the idempotency key made before), or a refusal. */
export type ActOutcome = { kind: 'action'; row: ActionRow } | { kind: 'refused'; code: 'FORBIDDEN' | 'RATE_LIMITED'; row: ActionRow | undefined } | { kind: 'key-reused'; row: ActionRow }

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
 * Acts: checks the permission and the key's rate, records the action in the audit, calls the
 * cloud (within `upstream.actionTimeoutMs`), and records how it ended; a stop the cloud accepted
 * is folded into its task in the same transaction. Refused attempts are recorded too. Logs never
 * carry a message's text.
 */
export class ActionRunner {
  readonly client: ActionClient
  private readonly limiter: RateLimiter
  private readonly now: () => Date

  constructor(private readonly options: ActionRunnerOptions) {
    const { config } = options
    this.client = options.client ?? new ActionClient({ services: config.services, timeoutMs: config.upstream.actionTimeoutMs, headerPrefix: config.ingest.signatureHeaderPrefixes[0] })
    this.now = options.now ?? (() => new Date())
    this.limiter = new RateLimiter(config.limits.actionsPerMinute, 60_000, () => this.now().getTime())
  }

  /** Whether the service code has what acting needs (a `baseUrl` and a secret). */
  canReach(serviceCode: string): boolean {
    return this.client.canReach(serviceCode)
  }

  /** Asks for an action; see {@link ActOutcome}. */
  async act(actor: Actor, args: ActionArgs, request: ActionRequest): Promise<ActOutcome> {
    const keyScope = actor.keyName ?? ''
    const argsHash = argsFingerprint(args)
    const now = this.now()
    const reuseAfter = new Date(now.getTime() - IDEMPOTENCY_WINDOW_MS)
    if (!actor.canOperate) return { kind: 'refused', code: 'FORBIDDEN', row: await this.refusal(actor, args, request, argsHash, 'FORBIDDEN', 'The API key may only read.') }
    if (request.idempotencyKey) {
      // A request repeated under its key is answered without counting against the rate.
      const earlier = await actionByKey(this.options.db, keyScope, request.idempotencyKey)
      if (earlier && earlier.requestedAt >= reuseAfter) return earlier.argsHash === argsHash ? { kind: 'action', row: earlier } : { kind: 'key-reused', row: earlier }
    }
    const rate = this.limiter.take(keyScope)
    if (rate !== 'allowed') {
      // One refusal a window is recorded: a client hammering past its limit cannot flood the audit.
      const row =
        rate === 'first-refusal' ? await this.refusal(actor, args, request, argsHash, 'RATE_LIMITED', `More than ${this.options.config.limits.actionsPerMinute} actions a minute.`) : undefined
      if (!row) this.options.metrics?.actions.inc({ kind: args.kind, state: 'REFUSED' })
      return { kind: 'refused', code: 'RATE_LIMITED', row }
    }
    const recorded = await recordAction(this.options.db, { ...rowOf(actor, args, request, argsHash), state: 'PENDING', requestedAt: now }, reuseAfter)
    if (!recorded.fresh) return recorded.row.argsHash === argsHash ? { kind: 'action', row: recorded.row } : { kind: 'key-reused', row: recorded.row }
    return { kind: 'action', row: await this.send(recorded.row, args) }
  }

  /**
   * Ends the actions a stopped process left PENDING. Another instance's calls end within
   * `upstream.actionTimeoutMs`, so only older ones (by a minute more) are taken for abandoned.
   */
  async start(): Promise<void> {
    const now = this.now()
    const abandoned = await abandonPending(this.options.db, new Date(now.getTime() - this.options.config.upstream.actionTimeoutMs - 60_000), now)
    if (abandoned > 0) this.options.log.warn({ abandoned }, `actions: ${abandoned} left PENDING by a stopped process marked FAILED`)
  }

  /** Ends every cloud call under way (the gateway stops). */
  close(): void {
    this.client.close()
  }

  private async send(row: ActionRow, args: ActionArgs): Promise<ActionRow> {
    const { answer, attempts } = await this.client.call(args)
    const succeeded = answer.kind === 'answered' && answer.ret === 0
    const outcome = {
      state: succeeded ? ('SUCCEEDED' as const) : ('FAILED' as const),
      ret: answer.kind === 'answered' ? answer.ret : null,
      message: messageOf(answer),
      attempts,
      finishedAt: this.now(),
    }
    const stop = succeeded && args.kind === 'STOP_TASK' ? stopEvidence(args.serviceCode, args.taskId, row.requestedAt) : undefined
    const finished = await finishAction(this.options.db, row.id, outcome, stop ? (tx) => applyToGraph(tx, [stop], outcome.finishedAt) : undefined)
    const result = finished ?? { ...row, ...outcome }
    this.options.metrics?.actions.inc({ kind: row.kind, state: result.state })
    this.options.log.info(
      { action: row.id, kind: row.kind, serviceCode: row.serviceCode, taskId: row.taskId, userName: row.userName, requestedBy: row.requestedBy, state: result.state, ret: result.ret, attempts },
      `action ${row.id} (${row.kind}) ${result.state}${result.ret !== null ? ` (ret ${result.ret})` : ''}`,
    )
    return result
  }

  private async refusal(actor: Actor, args: ActionArgs, request: ActionRequest, argsHash: string, code: 'FORBIDDEN' | 'RATE_LIMITED', message: string): Promise<ActionRow> {
    const now = this.now()
    // A refusal keeps no idempotency key: the request, once allowed, must still be able to use it.
    const { row } = await recordAction(
      this.options.db,
      { ...rowOf(actor, args, { reason: request.reason }, argsHash), state: 'REFUSED', refusal: code, message: `${code}: ${message}`, requestedAt: now, finishedAt: now },
      now,
    )
    this.options.metrics?.actions.inc({ kind: args.kind, state: 'REFUSED' })
    this.options.log.warn({ action: row.id, kind: args.kind, serviceCode: args.serviceCode, requestedBy: actor.keyName ?? null, refusal: code }, `action ${row.id} (${args.kind}) refused: ${code}`)
    return row
  }
}

function rowOf(actor: Actor, args: ActionArgs, request: ActionRequest, argsHash: string) {
  return {
    kind: args.kind,
    serviceCode: args.serviceCode,
    taskId: args.kind === 'STOP_TASK' ? args.taskId : null,
    userName: args.kind === 'SEND_MESSAGE' ? args.userName : null,
    text: args.kind === 'SEND_MESSAGE' ? args.text : null,
    fromName: args.kind === 'SEND_MESSAGE' ? args.from : null,
    requestedBy: actor.keyName ?? null,
    reason: request.reason ?? null,
    argsHash,
    idempotencyKey: request.idempotencyKey ?? null,
    keyScope: actor.keyName ?? '',
  }
}

function messageOf(answer: CloudAnswer): string | null {
  if (answer.kind === 'answered') return answer.message ?? (answer.ret === 0 ? null : `The cloud answered ret ${answer.ret}.`)
  return answer.message
}
