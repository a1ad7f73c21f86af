import type { ActionArgs } from '../../model/action.model.js'
import type { ActionRow } from '../../storage/tables/action.table.js'
import type { ActionRequest, Actor } from '../../work/outbound/action.audit.js'
import type { ActionRunner, ActOutcome } from '../../work/outbound/action.runner.js'
import { LOCAL_CALLER, requireOperate, type Scope } from './auth.scope.js'
import { badUserInput, graphqlError } from './graphql.errors.js'

/**
 * What every acting resolver (the cloud's actions, the webhook outbox's) does with the runner:
 * refusing a read-only key, and turning the runner's outcome into the answer or its error.
 */

/**
 * Who acts, as the audit names them and keeps their rate: a token by its `sub` (with its `name`,
 * its rate its own), a key by its name, the local user as `local`. Never null.
 */
export function actorOf(scope: Scope): Actor {
  const caller = scope.caller ?? (scope.keyName ? { method: 'key' as const, subject: scope.keyName } : LOCAL_CALLER)
  const by = caller.name ? `${caller.subject} (${caller.name})` : caller.subject
  const keyName = scope.keyName ?? (caller.method === 'token' ? `token:${caller.subject}` : undefined)
  return { keyName, by, canOperate: scope.canOperate }
}

/** The process's runner; a process without one cannot act. */
export function requireRunner(runner: ActionRunner | undefined): ActionRunner {
  if (!runner) throw graphqlError('INTERNAL_SERVER_ERROR', 'Actions are not available in this process.')
  return runner
}

/**
 * Refuses a key that may only read with FORBIDDEN, after the runner counted the attempt against
 * the key's rate and recorded it when `mayRecord`: only when the code it named is one the key
 * reads and livegate knows, so a refusal never lands in another tenant's audit or feed.
 */
export async function refuseReadOnly(
  runner: ActionRunner,
  scope: Scope,
  args: ActionArgs,
  request: ActionRequest,
  mayRecord: boolean,
  what: string,
): Promise<never> {
  await runner.refuse({ ...actorOf(scope), canOperate: false }, args, request, mayRecord)
  requireOperate(scope, what)
  throw new Error('unreachable: requireOperate refuses a key that may not operate')
}

/** The action an outcome names, or the error a refusal or a reused key answers with. */
export function actionOf(outcome: ActOutcome): ActionRow {
  switch (outcome.kind) {
    case 'action':
      return outcome.row
    case 'key-reused':
      throw badUserInput(
        'idempotencyKey was used (within 24 h) for an action with other arguments; use a new key for a new action.',
        'idempotencyKey',
      )
    case 'refused':
      // 429 only when nothing else in the request answered: see partialAnswerStatusPlugin.
      throw graphqlError(
        'RATE_LIMITED',
        'Too many actions: this API key may ask for `limits.actionsPerMinute` a minute; retry later.',
        { http: { status: 429 } },
      )
  }
}
