import DataLoader from 'dataloader'

import { deriveTask } from '../../../fold/task.derive.js'
import { type CloudActionArgs, idempotencyKeyProblem, textProblem } from '../../../model/action.model.js'
import { type ActionCriteria, actionPage, countActions, latestStops } from '../../../storage/outbound/action.queries.js'
import type { ActionRow } from '../../../storage/tables/action.table.js'
import { tasksByKeys } from '../../../storage/graph/task.queries.js'
import type { ActionRequest } from '../../../work/outbound/action.audit.js'
import { allowedCodes, allowedUser, inScope, type Scope } from '../auth.scope.js'
import { type GraphqlContext, subscribeTo } from '../reads/request.context.js'
import { requireGlobalId, toGlobalId } from '../global.id.js'
import { badUserInput } from '../graphql.errors.js'
import { actionOf, actorOf, refuseReadOnly, requireRunner } from '../action.outcome.js'
import { type ConnectionData, PAGE_ARGUMENTS, pageWindow, rowIdCursor, toConnection } from '../connection.pagination.js'
import {
  Arg,
  Ctx,
  FieldResolver,
  ID,
  Int,
  Mutation,
  Query,
  Resolver,
  Root,
  Subscription,
} from '../type-graphql.shim.js'
import {
  Action,
  ActionConnection,
  ActionFilter,
  ActionState,
  SendMessagePayload,
  StopTaskPayload,
} from '../types/action.type.js'
import type { TaskView } from '../../../storage/tables/task.node.js'
import { Task } from '../types/task.type.js'

const { first: FIRST, after: AFTER } = PAGE_ARGUMENTS
const actionCursor = rowIdCursor('a1')
// What a message is signed from when the caller names no sender.
const DEFAULT_FROM = 'livegate'

/** The audit log, the two actions, and who the caller is. */
@Resolver(() => Action)
export class ActionResolver {
  @Mutation(() => StopTaskPayload, {
    nullable: true,
    description:
      'Stops a running task through the cloud (`cancel_task`). Needs an API key with `"can": ["operate"]` (else ' +
      "FORBIDDEN, recorded when the key reads the task's service code). Null, with an error, when refused: each " +
      'field of a request answers on its own, so a request of several shows every action it sent. The answer ' +
      'comes once the cloud answered, or after `upstream.actionTimeoutMs`: a cloud that refuses (`ret` ≠ 0) or ' +
      'hangs gives a FAILED action, not an error. The task ends, with `endReason: STOPPED`, when a callback or ' +
      'the task list says so.',
  })
  async stopTask(
    @Arg('id', () => ID, { description: "The task's global id (`Task.id`)." }) id: string,
    @Arg('reason', () => String, {
      nullable: true,
      description: 'Why, for the audit (at most 1,000 characters, one line).',
    })
    reason: string | null | undefined,
    @Arg('idempotencyKey', () => String, {
      nullable: true,
      description:
        'Send the same key again (within 24 h, with the same arguments) to get the same action back without ' +
        'stopping twice.',
    })
    idempotencyKey: string | null | undefined,
    @Ctx() context: GraphqlContext,
  ): Promise<{ action: ActionRow; task: TaskView | null }> {
    const [serviceCode = '', taskId = ''] = requireGlobalId(id, 'id', ['Task']).key
    const request = checkedRequest(reason, idempotencyKey)
    const runner = requireRunner(context.actions)
    const args: CloudActionArgs = { kind: 'STOP_TASK', serviceCode, taskId }
    if (!context.scope.canOperate)
      await refuseReadOnly(runner, context.scope, args, request, knownCode(context, serviceCode), 'stopping a task')
    // Out of scope or unknown: the same answer, so a key learns nothing of another tenant's tasks.
    const known = inScope(context.scope, serviceCode) ? await context.loaders.task.load({ serviceCode, taskId }) : null
    if (!known) throw badUserInput('id names no task livegate knows.', 'id')
    if (!runner.canReach(serviceCode))
      throw badUserInput(`Service code "${serviceCode}" has no baseUrl and secret to act with.`, 'id')
    const row = actionOf(await runner.act(actorOf(context.scope), args, request))
    const [now] = await tasksByKeys(context.db, [{ serviceCode, taskId }])
    return { action: row, task: now ? deriveTask(now.state) : null }
  }

  @Mutation(() => SendMessagePayload, {
    nullable: true,
    description:
      "Sends a text message to a connected client SDK (a broadcaster's app) through the cloud (`send_txt_msg`). " +
      'Needs `"can": ["operate"]`. Sent at most once: a cloud that hangs gives a FAILED action, never a second ' +
      'message.',
  })
  async sendMessage(
    @Arg('serviceCode', () => String, { description: 'The service code the user belongs to.' }) serviceCode: string,
    @Arg('userName', () => String, { description: "The receiving user (`dst_username`), as in the task list's users." })
    userName: string,
    @Arg('text', () => String, { description: 'The message: one line, at most 1,000 characters.' }) text: string,
    @Arg('from', () => String, {
      nullable: true,
      description: 'The sender\'s name the app shows (`from_username`); "livegate" when absent.',
    })
    from: string | null | undefined,
    @Arg('idempotencyKey', () => String, {
      nullable: true,
      description:
        'Send the same key again (within 24 h, with the same arguments) to get the same action back: the message ' +
        'is sent once.',
    })
    idempotencyKey: string | null | undefined,
    @Ctx() context: GraphqlContext,
  ): Promise<{ action: ActionRow }> {
    for (const [name, value] of [
      ['serviceCode', serviceCode],
      ['userName', userName],
      ['text', text],
      ['from', from ?? DEFAULT_FROM],
    ] as const) {
      const problem = textProblem(name, value)
      if (problem) throw badUserInput(problem, name)
    }
    const request = checkedRequest(undefined, idempotencyKey)
    const runner = requireRunner(context.actions)
    const args: CloudActionArgs = { kind: 'SEND_MESSAGE', serviceCode, userName, text, from: from ?? DEFAULT_FROM }
    const known = knownCode(context, serviceCode)
    if (!context.scope.canOperate)
      await refuseReadOnly(runner, context.scope, args, request, known, 'sending a message')
    if (!known) throw badUserInput('serviceCode names no service code livegate knows.', 'serviceCode')
    // A broadcaster's own view messages only its own user: another reads as a user it does not know.
    if (context.scope.userName !== undefined && context.scope.userName !== userName)
      throw badUserInput('userName names no user this caller may message.', 'userName')
    if (!runner.canReach(serviceCode))
      throw badUserInput(`Service code "${serviceCode}" has no baseUrl and secret to act with.`, 'serviceCode')
    return { action: actionOf(await runner.act(actorOf(context.scope), args, request)) }
  }

  @Query(() => ActionConnection, {
    description: 'The audit log: every action and every refused attempt to act, newest first.',
  })
  async actions(
    @Arg('filter', () => ActionFilter, {
      nullable: true,
      description: 'Which actions; all the caller may read when absent.',
    })
    filter: ActionFilter | null | undefined,
    @Arg('first', () => Int, { nullable: true, description: FIRST }) first: number | null | undefined,
    @Arg('after', () => String, { nullable: true, description: AFTER }) after: string | null | undefined,
    @Ctx() { db, config, scope }: GraphqlContext,
  ): Promise<ConnectionData<ActionRow>> {
    const window = pageWindow({ first, after }, config.graphql, actionCursor)
    const criteria = actionCriteria(filter, scope)
    const rows = await actionPage(db, criteria, window.after, window.fetch)
    return toConnection(rows, window, {
      codec: actionCursor,
      keyOf: (row) => row.id,
      toNode: (row) => row,
      countAll: () => countActions(db, criteria),
    })
  }

  @Subscription(() => Action, {
    description: 'Each action the caller may read, pushed when it is asked for (or refused) and again when it ends.',
    subscribe: ({ args, context }) =>
      subscribeTo(context, 'action', (scope) =>
        actionCriteria((args as { filter?: ActionFilter | null }).filter, scope),
      ),
  })
  actionChanged(
    @Root() row: ActionRow,
    @Arg('filter', () => ActionFilter, {
      nullable: true,
      description: 'Which actions to follow; all the caller may read when absent.',
    })
    _filter: ActionFilter | null,
  ): ActionRow {
    return row
  }

  @FieldResolver(() => ID, { description: 'An opaque global id; pass it to `node(id:)`.' })
  id(@Root() row: ActionRow): string {
    return actionGlobalId(row)
  }

  @FieldResolver(() => ActionState, { description: 'Where it stands; a refused attempt is FAILED (see `refusal`).' })
  state(@Root() row: ActionRow): keyof typeof ActionState {
    return row.state === 'REFUSED' ? 'FAILED' : row.state
  }
}

/** `Task.stopRequest`: the latest stop asked for the task. */
@Resolver(() => Task)
export class TaskStopRequestResolver {
  @FieldResolver(() => Action, {
    nullable: true,
    description: 'The latest stop asked for this task through livegate (`stopTask`); null when none was.',
  })
  async stopRequest(@Root() task: TaskView, @Ctx() context: GraphqlContext): Promise<ActionRow | null> {
    return (await stopLoaderOf(context).load(`${task.serviceCode}\u0000${task.id}`)) ?? null
  }
}

/** An action's global id: of its row id (the audit's rows are never renumbered). */
export function actionGlobalId(row: Pick<ActionRow, 'id'>): string {
  return toGlobalId('Action', row.id)
}

/** The `ActionFilter` argument as store criteria, within the caller's scope. */
export function actionCriteria(filter: ActionFilter | null | undefined, scope: Scope): ActionCriteria {
  const criteria: ActionCriteria = { allowedServiceCodes: allowedCodes(scope), allowedUserName: allowedUser(scope) }
  if (!filter) return criteria
  if (filter.serviceCode?.includes('\u0000'))
    throw badUserInput('filter.serviceCode may not contain a NUL character.', 'filter')
  criteria.serviceCode = filter.serviceCode ?? null
  criteria.kind = filter.kind ?? null
  if (filter.state) criteria.states = filter.state === 'FAILED' ? ['FAILED', 'REFUSED'] : [filter.state]
  if (filter.task) {
    const [serviceCode = '', taskId = ''] = requireGlobalId(filter.task, 'filter', ['Task'], 'filter.task').key
    // Another code than `serviceCode` asks for nothing, and gets it.
    criteria.serviceCode = filter.serviceCode != null && filter.serviceCode !== serviceCode ? '\u0001' : serviceCode
    criteria.taskId = taskId
  }
  return criteria
}

function checkedRequest(reason: string | null | undefined, idempotencyKey: string | null | undefined): ActionRequest {
  const problem = reason == null ? undefined : textProblem('reason', reason)
  if (problem) throw badUserInput(problem, 'reason')
  const keyProblem = idempotencyKey == null ? undefined : idempotencyKeyProblem(idempotencyKey)
  if (keyProblem) throw badUserInput(keyProblem, 'idempotencyKey')
  return { reason: reason ?? null, idempotencyKey: idempotencyKey ?? null }
}

/** Whether a service code is one the caller reads and livegate is configured with. */
function knownCode(context: GraphqlContext, serviceCode: string): boolean {
  return (
    inScope(context.scope, serviceCode) &&
    context.config.services.some((service) => service.serviceCode === serviceCode)
  )
}

const stopLoaders = new WeakMap<GraphqlContext, DataLoader<string, ActionRow | undefined>>()

// Per request, like every loader: a page of tasks reads its stops in one statement per code.
function stopLoaderOf(context: GraphqlContext): DataLoader<string, ActionRow | undefined> {
  let loader = stopLoaders.get(context)
  if (!loader) {
    loader = new DataLoader(async (keys: readonly string[]) => {
      const byCode = new Map<string, string[]>()
      for (const key of keys) {
        const [code = '', taskId = ''] = key.split('\u0000')
        byCode.set(code, [...(byCode.get(code) ?? []), taskId])
      }
      const found = new Map<string, ActionRow>()
      for (const [code, taskIds] of byCode) {
        for (const [taskId, row] of await latestStops(context.db, code, taskIds))
          found.set(`${code}\u0000${taskId}`, row)
      }
      return keys.map((key) => found.get(key))
    })
    stopLoaders.set(context, loader)
  }
  return loader
}
