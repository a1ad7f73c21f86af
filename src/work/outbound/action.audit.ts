import type { FastifyBaseLogger } from 'fastify'
import type { ActionArgs } from '../../model/action.model.js'
import { type ActionOutcome, finishAction, recordAction } from '../../storage/outbound/action.statements.js'
import type { ActionRow } from '../../storage/tables/action.table.js'
import type { Db } from '../../storage/database.client.js'
import type { Metrics } from '../metrics.registry.js'

/**
 * The audit's writes for {@link ActionRunner}: an action's row, how it ended, and a refusal. Each
 * write is counted and logged here, once, so an action and a refusal read alike in the log
 * whichever path (a cloud action, an outbox action, a refused attempt) made them.
 */

/** Who asks: whom the audit names, what its rate and idempotency are kept under, and whether it may act. */
export interface Actor {
  /** The key's name, or `token:<sub>` for a token: the rate and idempotency keys are kept per caller. */
  keyName: string | undefined
  /** Who acted, as the audit names them: a token's `sub` (with its `name`), a key's name, or `local`. */
  by: string
  canOperate: boolean
}

/** What an operator added to the request. */
export interface ActionRequest {
  reason?: string | null | undefined
  idempotencyKey?: string | null | undefined
}

/** Where the audit writes, counts and logs. */
export interface AuditSink {
  db: Db
  log: Pick<FastifyBaseLogger, 'info' | 'warn'>
  metrics?: Pick<Metrics, 'actions'> | undefined
  now: () => Date
}

/** The audit row's columns for an attempt, before its state is known. */
export function auditRow(actor: Actor, args: ActionArgs, request: ActionRequest, argsHash: string) {
  return {
    kind: args.kind,
    serviceCode: args.serviceCode,
    taskId: args.kind === 'STOP_TASK' ? args.taskId : null,
    userName: args.kind === 'SEND_MESSAGE' ? args.userName : null,
    endpoint: 'endpoint' in args ? args.endpoint : null,
    text: args.kind === 'SEND_MESSAGE' ? args.text : null,
    fromName: args.kind === 'SEND_MESSAGE' ? args.from : null,
    requestedBy: actor.by,
    reason: request.reason ?? null,
    argsHash,
    idempotencyKey: request.idempotencyKey ?? null,
    keyScope: actor.keyName ?? '',
  }
}

/** Records how an action ended (with `alsoInTransaction` in its transaction), counts and logs it. */
export async function endAction(
  sink: AuditSink,
  row: ActionRow,
  outcome: ActionOutcome,
  alsoInTransaction?: (tx: Db) => Promise<unknown>,
): Promise<ActionRow> {
  const { attempts } = outcome
  const finished = await finishAction(sink.db, row.id, outcome, alsoInTransaction)
  const result = finished ?? { ...row, ...outcome }
  sink.metrics?.actions.inc({ kind: row.kind, state: result.state })
  const { id, kind, serviceCode, taskId, userName, endpoint, requestedBy } = row
  // Never the message's text: it is the operator's words to a broadcaster, not the log's.
  sink.log.info(
    {
      action: id,
      kind,
      serviceCode,
      taskId,
      userName,
      endpoint,
      requestedBy,
      state: result.state,
      ret: result.ret,
      attempts,
    },
    `action ${id} (${kind}) ${result.state}${result.ret !== null ? ` (ret ${result.ret})` : ''}`,
  )
  return result
}

/**
 * Records a refused attempt, ended at once, under the code it named; the caller decided it may.
 * With `admit` (the key's rate, asked in the row's transaction), it may write nothing (undefined).
 */
export async function recordRefusal(
  sink: AuditSink,
  actor: Actor,
  args: ActionArgs,
  request: ActionRequest,
  argsHash: string,
  code: 'FORBIDDEN' | 'RATE_LIMITED',
  message: string,
): Promise<ActionRow>
export async function recordRefusal(
  sink: AuditSink,
  actor: Actor,
  args: ActionArgs,
  request: ActionRequest,
  argsHash: string,
  code: 'FORBIDDEN' | 'RATE_LIMITED',
  message: string,
  admit: (tx: Db) => Promise<boolean>,
): Promise<ActionRow | undefined>
export async function recordRefusal(
  sink: AuditSink,
  actor: Actor,
  args: ActionArgs,
  request: ActionRequest,
  argsHash: string,
  code: 'FORBIDDEN' | 'RATE_LIMITED',
  message: string,
  admit: (tx: Db) => Promise<boolean> = async () => true,
): Promise<ActionRow | undefined> {
  const now = sink.now()
  // A refusal keeps no idempotency key: the request, once allowed, must still be able to use it.
  const recorded = await recordAction(
    sink.db,
    {
      ...auditRow(actor, args, { reason: request.reason }, argsHash),
      state: 'REFUSED',
      refusal: code,
      message: `${code}: ${message}`,
      requestedAt: now,
      finishedAt: now,
    },
    now,
    admit,
  )
  if (!recorded) return undefined
  const { row } = recorded
  sink.metrics?.actions.inc({ kind: args.kind, state: 'REFUSED' })
  sink.log.warn(
    {
      action: row.id,
      kind: args.kind,
      serviceCode: args.serviceCode,
      requestedBy: actor.by,
      refusal: code,
    },
    `action ${row.id} (${args.kind}) refused: ${code}`,
  )
  return row
}
