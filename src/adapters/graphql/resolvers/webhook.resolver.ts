import type { WebhookDeliveryRow } from '../../../storage/tables/webhook.table.js'
import type { EndpointView } from '../../../work/outbound/webhook.service.js'
import { textProblem, type WebhookActionArgs } from '../../../model/action.model.js'
import type { ActionRequest } from '../../../work/outbound/action.audit.js'
import type { WorkDone } from '../../../work/outbound/action.runner.js'
import { allowedCodes, requireWholeService } from '../auth.scope.js'
import type { GraphqlContext } from '../reads/request.context.js'
import { badUserInput, echoed } from '../graphql.errors.js'
import { actionOf, actorOf, refuseReadOnly, requireRunner } from '../action.outcome.js'
import { type ConnectionData, PAGE_ARGUMENTS, pageWindow, rowIdCursor, toConnection } from '../connection.pagination.js'
import { Arg, Ctx, FieldResolver, ID, Int, Mutation, Query, Resolver, Root } from '../type-graphql.shim.js'
import {
  type WebhookDelivery,
  WebhookDeliveryConnection,
  WebhookDeliveryStatus,
  WebhookEndpoint,
  WebhookEndpointState,
} from '../types/webhook.type.js'

const deliveryCursor = rowIdCursor('wd1')

// Most ids one replay may name: a bound on the statement a client can make us run.
const MAX_EVENT_IDS = 10_000

/**
 * Webhook endpoints as the caller's key may see them (only an endpoint whose service codes the
 * key's cover: a tenant never learns of another's endpoint), and the two actions on them, which
 * need `"can": ["operate"]`.
 */
@Resolver(() => WebhookEndpoint)
export class WebhookResolver {
  @Query(() => [WebhookEndpoint], {
    description:
      'The configured webhook endpoints the caller may see (those whose service codes its key covers), in ' +
      'configuration order.',
  })
  async webhookEndpoints(@Ctx() context: GraphqlContext): Promise<WebhookEndpoint[]> {
    requireWholeService(context.scope, 'the webhook endpoints')
    const views = (await context.webhooks?.visibleEndpoints(allowedCodes(context.scope))) ?? []
    return views.map(endpointOf)
  }

  @FieldResolver(() => WebhookDeliveryConnection, {
    description: 'Its deliveries, newest first; of one status when `status` is given.',
  })
  async deliveries(
    @Root() endpoint: WebhookEndpoint,
    @Ctx() context: GraphqlContext,
    @Arg('status', () => WebhookDeliveryStatus, { nullable: true, description: 'Only deliveries in this state.' })
    status: WebhookDeliveryStatus | null,
    @Arg('first', () => Int, { nullable: true, description: PAGE_ARGUMENTS.first }) first: number | null,
    @Arg('after', () => String, { nullable: true, description: PAGE_ARGUMENTS.after }) after: string | null,
  ): Promise<ConnectionData<WebhookDelivery>> {
    const service = context.webhooks
    const window = pageWindow({ first, after }, context.config.graphql, deliveryCursor)
    const rows =
      service && window.size > 0
        ? await service.deliveries(endpoint.name, {
            status: status ?? undefined,
            beforeId: window.after,
            limit: window.fetch,
          })
        : []
    return toConnection(rows, window, {
      codec: deliveryCursor,
      keyOf: (row) => row.id,
      toNode: deliveryOf,
      countAll: () => service?.countDeliveries(endpoint.name, status ?? undefined) ?? Promise.resolve(0),
    })
  }

  @Mutation(() => Int, {
    nullable: true,
    description:
      "Puts an endpoint's dead letters or delivered events back in line (with their `webhook-id`): those with " +
      'these `eventIds`, or put in line since `since` (both: either; neither: every dead letter), at most 10,000 ' +
      'a call (call again for more). Answers how many. Needs an API key with `"can": ["operate"]`; recorded in ' +
      'the audit (`actions`, kind REPLAY_WEBHOOKS) and counted against `limits.actionsPerMinute`. An endpoint ' +
      'switched off is refused: switch it on first.',
  })
  async redeliverWebhooks(
    @Arg('endpoint', () => String, { description: "The endpoint's name." }) endpoint: string,
    @Arg('eventIds', () => [ID], {
      nullable: true,
      description: 'The events to send again (`WebhookDelivery.eventId`).',
    })
    eventIds: string[] | null,
    @Arg('since', () => Date, {
      nullable: true,
      description: 'Every dead letter or delivered event put in line at or after this time.',
    })
    since: Date | null,
    @Arg('reason', () => String, {
      nullable: true,
      description: 'Why, for the audit (at most 1,000 characters, one line).',
    })
    reason: string | null | undefined,
    @Ctx() context: GraphqlContext,
  ): Promise<number> {
    if (eventIds && eventIds.length > MAX_EVENT_IDS)
      throw badUserInput(
        `eventIds may name at most ${MAX_EVENT_IDS} events; got ${eventIds.length}. Use since, or several calls.`,
        'eventIds',
      )
    let count = 0
    await this.perform(context, endpoint, 'REPLAY_WEBHOOKS', reason, 'replaying webhooks', async (service, name) => {
      const done = await service.redeliver(name, { eventIds: eventIds ?? undefined, since: since ?? undefined })
      if ('disabled' in done) return { problem: SWITCHED_OFF }
      count = done.count
      return { done: `${count} ${count === 1 ? 'delivery' : 'deliveries'} put back in line.` }
    })
    return count
  }

  @Mutation(() => WebhookEndpoint, {
    nullable: true,
    description:
      'Switches an endpoint on or off. Off, it gets no attempts and what is meant for it is kept as dead ' +
      'letters; on again, `redeliverWebhooks` sends them. Needs an API key with `"can": ["operate"]`; recorded ' +
      'in the audit (kinds ENABLE_WEBHOOK_ENDPOINT, DISABLE_WEBHOOK_ENDPOINT) and counted against ' +
      '`limits.actionsPerMinute`.',
  })
  async setWebhookEndpointEnabled(
    @Arg('endpoint', () => String, { description: "The endpoint's name." }) endpoint: string,
    @Arg('enabled', () => Boolean, { description: 'On (true) or off (false).' }) enabled: boolean,
    @Arg('reason', () => String, {
      nullable: true,
      description: 'Why, for the audit (at most 1,000 characters, one line).',
    })
    reason: string | null | undefined,
    @Ctx() context: GraphqlContext,
  ): Promise<WebhookEndpoint> {
    const by = actorOf(context.scope).by
    const kind = enabled ? 'ENABLE_WEBHOOK_ENDPOINT' : 'DISABLE_WEBHOOK_ENDPOINT'
    const name = await this.perform(
      context,
      endpoint,
      kind,
      reason,
      'switching a webhook endpoint on or off',
      async (service, name) => {
        await service.setEnabled(name, enabled, by)
        return { done: `Switched ${enabled ? 'on' : 'off'}.` }
      },
    )
    const service = context.webhooks as NonNullable<GraphqlContext['webhooks']>
    return endpointOf((await service.visibleEndpoint(name, allowedCodes(context.scope))) as EndpointView)
  }

  /**
   * A webhook action: the arguments checked, a read-only key refused (recorded only when it may
   * see the endpoint), then rate limited, done and recorded by the action runner. Resolves to the
   * endpoint's name.
   */
  private async perform(
    context: GraphqlContext,
    endpoint: string,
    kind: WebhookActionArgs['kind'],
    reason: string | null | undefined,
    what: string,
    work: (service: NonNullable<GraphqlContext['webhooks']>, name: string) => Promise<WorkDone>,
  ): Promise<string> {
    const problem = reason == null ? undefined : textProblem('reason', reason)
    if (problem) throw badUserInput(problem, 'reason')
    requireWholeService(context.scope, 'a webhook endpoint')
    const request: ActionRequest = { reason: reason ?? null }
    const runner = requireRunner(context.actions)
    if (!context.scope.canOperate) {
      const seen = await visibleOrNone(context, endpoint)
      const args = seen ? argsOf(kind, seen) : { kind, serviceCode: '', endpoint: '' }
      await refuseReadOnly(runner, context.scope, args, request, seen !== undefined, what)
    }
    const view = await visible(context, endpoint)
    if (kind === 'REPLAY_WEBHOOKS' && view.state?.enabled === false) throw badUserInput(SWITCHED_OFF, 'endpoint')
    const service = context.webhooks as NonNullable<GraphqlContext['webhooks']>
    const actor = { ...actorOf(context.scope), canOperate: true }
    const row = actionOf(await runner.perform(actor, argsOf(kind, view), request, () => work(service, view.name)))
    // The endpoint was switched off between the check and the statement: nothing was put back.
    if (row.state === 'FAILED') throw badUserInput(row.message ?? SWITCHED_OFF, 'endpoint')
    return view.name
  }
}

const SWITCHED_OFF = 'The endpoint is switched off: switch it on (setWebhookEndpointEnabled) before replaying to it.'

/**
 * The audit's row names the endpoint's one service code; an endpoint of several (or of every
 * code) is recorded under `*`, which only a key that reads every code sees: never more tenants
 * than could see the endpoint itself.
 */
function argsOf(kind: WebhookActionArgs['kind'], view: EndpointView): WebhookActionArgs {
  const codes = view.serviceCodes
  return { kind, serviceCode: codes !== '*' && codes.length === 1 ? (codes[0] as string) : '*', endpoint: view.name }
}

async function visibleOrNone(context: GraphqlContext, name: string): Promise<EndpointView | undefined> {
  if (name.includes('\u0000')) return undefined
  return context.webhooks?.visibleEndpoint(name, allowedCodes(context.scope))
}

/** The endpoint by name if the caller may see it; one it may not reads as unknown. */
async function visible(context: GraphqlContext, name: string): Promise<EndpointView> {
  const view = await context.webhooks?.visibleEndpoint(name, allowedCodes(context.scope))
  if (!view)
    throw badUserInput(`No webhook endpoint is named "${echoed(name)}" (among those this API key may see).`, 'endpoint')
  return view
}

function endpointOf(view: EndpointView): WebhookEndpoint {
  const state = view.state
  const enabled = state?.enabled ?? true
  return {
    name: view.name,
    url: withoutCredentials(view.url),
    serviceCodes: view.serviceCodes === '*' ? ['*'] : [...view.serviceCodes],
    events: [...view.events],
    enabled,
    state: !enabled
      ? WebhookEndpointState.DISABLED
      : state?.failingSince
        ? WebhookEndpointState.FAILING
        : WebhookEndpointState.HEALTHY,
    disabledReason: state?.disabledReason ?? null,
    pending: state?.pending ?? 0,
    deadLetters: state?.deadLetters ?? 0,
    lastSuccessAt: state?.lastSuccessAt ?? null,
    lastFailureAt: state?.lastFailureAt ?? null,
    lastError: state?.lastError ?? null,
  }
}

function deliveryOf(row: WebhookDeliveryRow): WebhookDelivery {
  const waiting = row.status === 'PENDING' || row.status === 'RETRYING'
  return {
    eventId: row.eventId,
    eventType: row.eventType,
    serviceCode: row.serviceCode,
    status: row.status,
    attempts: row.attempts,
    lastStatusCode: row.lastStatusCode,
    lastError: row.lastError,
    nextAttemptAt: waiting ? row.nextAttemptAt : null,
    createdAt: row.createdAt,
    deliveredAt: row.deliveredAt,
  }
}

function withoutCredentials(url: string): string {
  const parsed = new URL(url)
  parsed.username = ''
  parsed.password = ''
  return parsed.toString()
}
