import { ConnectionType } from './connection.type.js'
import { Field, ID, Int, ObjectType, registerEnumType } from '../type-graphql.shim.js'

/** How an endpoint is doing. */
export const WebhookEndpointState = {
  HEALTHY: 'HEALTHY',
  FAILING: 'FAILING',
  DISABLED: 'DISABLED',
} as const
export type WebhookEndpointState = (typeof WebhookEndpointState)[keyof typeof WebhookEndpointState]

registerEnumType(WebhookEndpointState, {
  name: 'WebhookEndpointState',
  description: 'How a webhook endpoint is doing.',
  valuesConfig: {
    HEALTHY: { description: 'On, and its last attempt (if any) was delivered.' },
    FAILING: {
      description:
        'On, and every attempt since `lastSuccessAt` failed; switched off after `webhooks.disableAfter` of it.',
    },
    DISABLED: {
      description:
        'Switched off (it answered 410, failed for `webhooks.disableAfter`, or an operator did): no attempts; ' +
        'what is meant for it is kept as dead letters.',
    },
  },
})

/** Where a delivery stands. */
export const WebhookDeliveryStatus = {
  PENDING: 'PENDING',
  RETRYING: 'RETRYING',
  DELIVERED: 'DELIVERED',
  DEAD: 'DEAD',
} as const
export type WebhookDeliveryStatus = (typeof WebhookDeliveryStatus)[keyof typeof WebhookDeliveryStatus]

registerEnumType(WebhookDeliveryStatus, {
  name: 'WebhookDeliveryStatus',
  description: 'Where the delivery of one event to one endpoint stands.',
  valuesConfig: {
    PENDING: { description: 'In line, not attempted yet (or put back in line by `redeliverWebhooks`).' },
    RETRYING: { description: 'Attempted and failed; tried again at `nextAttemptAt`.' },
    DELIVERED: { description: 'The endpoint answered 2xx.' },
    DEAD: {
      description:
        'A dead letter: the retry schedule is spent, or the endpoint is switched off. `redeliverWebhooks` puts ' +
        'it back in line.',
    },
  },
})

@ObjectType('WebhookDelivery', {
  simpleResolvers: true,
  description: 'The delivery of one event to one endpoint: every attempt carries the same `webhook-id` (`eventId`).',
})
export class WebhookDelivery {
  @Field(() => ID, {
    description: "The event's stable id, sent as `webhook-id` on every attempt: a receiver deduplicates by it.",
  })
  eventId!: string

  @Field(() => String, { description: 'The event type, e.g. `callback.live_start`, `task.ended`.' })
  eventType!: string

  @Field(() => String, { description: 'The service code the event belongs to.' })
  serviceCode!: string

  @Field(() => WebhookDeliveryStatus, { description: 'Where it stands.' })
  status!: WebhookDeliveryStatus

  @Field(() => Int, { description: 'Attempts made so far (a replay starts again from 0).' })
  attempts!: number

  @Field(() => Int, {
    nullable: true,
    description:
      'The HTTP status of the last answer; null before one, or when the last attempt got none (timeout, refused ' +
      'connection).',
  })
  lastStatusCode!: number | null

  @Field(() => String, { nullable: true, description: 'Why the last attempt failed; null when it did not.' })
  lastError!: string | null

  @Field(() => Date, { nullable: true, description: 'When it is tried next; null once delivered or dead.' })
  nextAttemptAt!: Date | null

  @Field(() => Date, { description: 'When the event was put in line for this endpoint.' })
  createdAt!: Date

  @Field(() => Date, { nullable: true, description: 'When the endpoint answered 2xx; null until then.' })
  deliveredAt!: Date | null
}

@ObjectType('WebhookDeliveryConnection', {
  simpleResolvers: true,
  description: "An endpoint's deliveries, newest first.",
})
export class WebhookDeliveryConnection extends ConnectionType('WebhookDelivery', () => WebhookDelivery) {}

@ObjectType('WebhookEndpoint', {
  description: 'A configured webhook endpoint (`webhooks.endpoints[]`) and how its deliveries stand.',
})
export class WebhookEndpoint {
  @Field(() => String, { description: 'Its name in the configuration.' })
  name!: string

  @Field(() => String, { description: 'Where it is sent (without any user and password the URL holds).' })
  url!: string

  @Field(() => [String], { description: 'The service codes whose events it receives; `["*"]` for all.' })
  serviceCodes!: string[]

  @Field(() => [String], { description: 'The event types and `prefix.*` patterns it receives.' })
  events!: string[]

  @Field(() => Boolean, { description: 'Whether it is attempted at all.' })
  enabled!: boolean

  @Field(() => WebhookEndpointState, { description: 'How it is doing.' })
  state!: WebhookEndpointState

  @Field(() => String, { nullable: true, description: 'Why it was switched off; null while on.' })
  disabledReason!: string | null

  @Field(() => Int, { description: 'Deliveries in line (PENDING or RETRYING).' })
  pending!: number

  @Field(() => Int, { description: 'Dead letters kept (30 days).' })
  deadLetters!: number

  @Field(() => Date, { nullable: true, description: 'When an attempt was last delivered.' })
  lastSuccessAt!: Date | null

  @Field(() => Date, { nullable: true, description: 'When an attempt last failed.' })
  lastFailureAt!: Date | null

  @Field(() => String, { nullable: true, description: 'Why the last failed attempt failed.' })
  lastError!: string | null
}
