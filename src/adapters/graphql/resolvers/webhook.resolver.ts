import type { WebhookDeliveryRow } from '../../../storage/tables/webhook.table.js'
import type { EndpointView } from '../../../work/outbound/webhook.service.js'
import { allowedCodes, requireOperate } from '../auth.scope.js'
import type { GraphqlContext } from '../reads/request.context.js'
import { badUserInput, refuseNul } from '../graphql.errors.js'
import { type ConnectionData, PAGE_ARGUMENTS, pageWindow, rowIdCursor, toConnection } from '../connection.pagination.js'
import { Arg, Ctx, FieldResolver, ID, Int, Mutation, Query, Resolver, Root } from '../type-graphql.shim.js'
import { type WebhookDelivery, WebhookDeliveryConnection, WebhookDeliveryStatus, WebhookEndpoint, WebhookEndpointState } from '../types/webhook.type.js'

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
  @Query(() => [WebhookEndpoint], { description: 'The configured webhook endpoints the caller may see (those whose service codes its key covers), in configuration order.' })
  async webhookEndpoints(@Ctx() context: GraphqlContext): Promise<WebhookEndpoint[]> {
    const views = (await context.webhooks?.visibleEndpoints(allowedCodes(context.scope))) ?? []
    return views.map(endpointOf)
  }

  @FieldResolver(() => WebhookDeliveryConnection, { description: 'Its deliveries, newest first; of one status when `status` is given.' })
  async deliveries(
    @Root() endpoint: WebhookEndpoint,
    @Ctx() context: GraphqlContext,
    @Arg('status', () => WebhookDeliveryStatus, { nullable: true, description: 'Only deliveries in this state.' }) status: WebhookDeliveryStatus | null,
    @Arg('first', () => Int, { nullable: true, description: PAGE_ARGUMENTS.first }) first: number | null,
    @Arg('after', () => String, { nullable: true, description: PAGE_ARGUMENTS.after }) after: string | null,
  ): Promise<ConnectionData<WebhookDelivery>> {
    const service = context.webhooks
    const window = pageWindow({ first, after }, context.config.graphql, deliveryCursor)
    const rows = service && window.size > 0 ? await service.deliveries(endpoint.name, { status: status ?? undefined, beforeId: window.after, limit: window.fetch }) : []
    return toConnection(rows, window, {
      codec: deliveryCursor,
      keyOf: (row) => row.id,
      toNode: deliveryOf,
      countAll: () => service?.countDeliveries(endpoint.name, status ?? undefined) ?? Promise.resolve(0),
    })
  }

  @Mutation(() => Int, {
    description:
      'Puts an endpoint\'s dead letters or delivered events back in line (with their `webhook-id`): those with these `eventIds`, or put in line since `since` (both: either; neither: every dead letter). Answers how many. Needs an API key with `"can": ["operate"]`.',
  })
  async redeliverWebhooks(
    @Arg('endpoint', () => String, { description: "The endpoint's name." }) endpoint: string,
    @Arg('eventIds', () => [ID], { nullable: true, description: 'The events to send again (`WebhookDelivery.eventId`).' }) eventIds: string[] | null,
    @Arg('since', () => Date, { nullable: true, description: 'Every dead letter or delivered event put in line at or after this time.' }) since: Date | null,
    @Ctx() context: GraphqlContext,
  ): Promise<number> {
    requireOperate(context.scope, 'replaying webhooks')
    const view = await visible(context, endpoint)
    if (eventIds && eventIds.length > MAX_EVENT_IDS) throw badUserInput(`eventIds may name at most ${MAX_EVENT_IDS} events; got ${eventIds.length}. Use since, or several calls.`, 'eventIds')
    return (context.webhooks as NonNullable<GraphqlContext['webhooks']>).redeliver(view.name, { eventIds: eventIds ?? undefined, since: since ?? undefined })
  }

  @Mutation(() => WebhookEndpoint, {
    description:
      'Switches an endpoint on or off. Off, it gets no attempts and what is meant for it is kept as dead letters; on again, `redeliverWebhooks` sends them. Needs an API key with `"can": ["operate"]`.',
  })
  async setWebhookEndpointEnabled(
    @Arg('endpoint', () => String, { description: "The endpoint's name." }) endpoint: string,
    @Arg('enabled', () => Boolean, { description: 'On (true) or off (false).' }) enabled: boolean,
    @Ctx() context: GraphqlContext,
  ): Promise<WebhookEndpoint> {
    requireOperate(context.scope, 'switching a webhook endpoint on or off')
    const view = await visible(context, endpoint)
    const service = context.webhooks as NonNullable<GraphqlContext['webhooks']>
    await service.setEnabled(view.name, enabled, context.scope.keyName ? `API key "${context.scope.keyName}"` : 'the local user')
    return endpointOf((await service.visibleEndpoint(view.name, allowedCodes(context.scope))) as EndpointView)
  }
}

/** The endpoint by name if the caller may see it; one it may not reads as unknown. */
async function visible(context: GraphqlContext, name: string): Promise<EndpointView> {
  refuseNul({ name }, 'endpoint')
  const view = await context.webhooks?.visibleEndpoint(name, allowedCodes(context.scope))
  if (!view) throw badUserInput(`No webhook endpoint is named "${name}" (among those this API key may see).`, 'endpoint')
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
    state: !enabled ? WebhookEndpointState.DISABLED : state?.failingSince ? WebhookEndpointState.FAILING : WebhookEndpointState.HEALTHY,
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
