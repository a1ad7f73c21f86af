import { Field, ID, InputType, Int, ObjectType, registerEnumType } from '../type-graphql.shim.js'
import { ConnectionType } from './connection.type.js'
import { Node } from './node.type.js'
import { DateTimeScalar } from './scalars.type.js'
import { Task } from './task.type.js'

/** What an action does. */
export const ActionKind = {
  STOP_TASK: 'STOP_TASK',
  SEND_MESSAGE: 'SEND_MESSAGE',
  REPLAY_WEBHOOKS: 'REPLAY_WEBHOOKS',
  ENABLE_WEBHOOK_ENDPOINT: 'ENABLE_WEBHOOK_ENDPOINT',
  DISABLE_WEBHOOK_ENDPOINT: 'DISABLE_WEBHOOK_ENDPOINT',
  ACKNOWLEDGE_INCIDENT: 'ACKNOWLEDGE_INCIDENT',
} as const
registerEnumType(ActionKind, {
  name: 'ActionKind',
  description: 'What an action asked the cloud, or livegate itself (its webhook outbox, its incidents), to do.',
  valuesConfig: {
    STOP_TASK: { description: "Stop a running task (the cloud's `cancel_task`)." },
    SEND_MESSAGE: {
      description: "Send a text message to a connected client SDK, a broadcaster's app (the cloud's `send_txt_msg`).",
    },
    REPLAY_WEBHOOKS: {
      description: 'Put webhook deliveries back in line (`redeliverWebhooks`); `message` says how many.',
    },
    ENABLE_WEBHOOK_ENDPOINT: { description: 'Switch a webhook endpoint on (`setWebhookEndpointEnabled`).' },
    DISABLE_WEBHOOK_ENDPOINT: { description: 'Switch a webhook endpoint off (`setWebhookEndpointEnabled`).' },
    ACKNOWLEDGE_INCIDENT: {
      description:
        "Acknowledge an incident (`acknowledgeIncident`): livegate's own, no call to the cloud; `reason` is the note.",
    },
  },
})

/** Where an action stands. */
export const ActionState = { PENDING: 'PENDING', SUCCEEDED: 'SUCCEEDED', FAILED: 'FAILED' } as const
registerEnumType(ActionState, {
  name: 'ActionState',
  description: 'Where an action stands.',
  valuesConfig: {
    PENDING: { description: 'Asked for; the cloud has not answered yet.' },
    SUCCEEDED: {
      description: 'The cloud answered `ret` 0. A stop is confirmed when the task ends (`endReason: STOPPED`).',
    },
    FAILED: {
      description:
        'The cloud answered `ret` ≠ 0, gave no answer within `upstream.actionTimeoutMs`, or could not be ' +
        'reached; or livegate refused the attempt (`refusal` says why). `message` says what went wrong.',
    },
  },
})

// `id`, `state` and `task` are resolved by ActionResolver from the stored row.
@ObjectType('Action', {
  simpleResolvers: true,
  implements: Node,
  description:
    "An action asked for through livegate (a stop, a message), or an attempt livegate refused: the audit log's entry.",
})
export class Action extends Node {
  @Field(() => ActionKind, { description: 'What it asked the cloud to do.' }) kind!: keyof typeof ActionKind
  @Field(() => String, {
    description:
      'The service code it acted under; `*` for a webhook endpoint of several codes (only a key that reads every ' +
      'code sees it).',
  })
  serviceCode!: string
  @Field(() => String, { nullable: true, description: "The stopped task's `hashed_id`; null for a message." }) taskId!:
    | string
    | null
  @Field(() => String, {
    nullable: true,
    description: 'The user a message was sent to (`dst_username`); null for a stop.',
  })
  userName!: string | null
  @Field(() => String, {
    nullable: true,
    description: 'The webhook endpoint a replay or a switch acted on; null for a cloud action.',
  })
  endpoint!: string | null
  @Field(() => String, {
    nullable: true,
    description: "The API key's name that asked; null for the local user (no keys configured).",
  })
  requestedBy!: string | null
  @Field(() => String, { nullable: true, description: 'Why, as the operator said.' }) reason!: string | null
  @Field(() => DateTimeScalar, { description: 'When it was asked for.' }) requestedAt!: Date
  @Field(() => Int, { nullable: true, description: "The cloud's `ret` (0 = success); null when it gave none." }) ret!:
    | number
    | null
  @Field(() => String, {
    nullable: true,
    description: "The cloud's `msg`, or what went wrong (a timeout, an unreachable cloud, a refusal).",
  })
  message!: string | null
  @Field(() => DateTimeScalar, { nullable: true, description: 'When it ended; null while PENDING.' })
  finishedAt!: Date | null
  @Field(() => String, {
    nullable: true,
    description:
      'The code livegate refused the attempt with before sending anything (`FORBIDDEN`, `RATE_LIMITED`); null ' +
      'for an action sent.',
  })
  refusal!: string | null
}

@ObjectType('StopTaskPayload', {
  simpleResolvers: true,
  description: 'What `stopTask` answers: the action, and the task as it is now.',
})
export class StopTaskPayload {
  @Field(() => Action, { description: 'The stop, as recorded; SUCCEEDED once the cloud accepted it.' }) action!: Action
  @Field(() => Task, {
    nullable: true,
    description: 'The task; it stays LIVE until a callback or the task list says it ended (then `endReason: STOPPED`).',
  })
  task!: Task | null
}

@ObjectType('SendMessagePayload', { simpleResolvers: true, description: 'What `sendMessage` answers.' })
export class SendMessagePayload {
  @Field(() => Action, { description: "The message's action, as recorded." }) action!: Action
}

@ObjectType('ActionConnection', { simpleResolvers: true, description: 'A page of the audit log, newest first.' })
export class ActionConnection extends ConnectionType('Action', () => Action) {}

@InputType('ActionFilter', { description: 'Which actions; every condition given must hold.' })
export class ActionFilter {
  @Field(() => String, { nullable: true, description: 'Actions under this service code.' }) serviceCode?: string | null
  @Field(() => ActionKind, { nullable: true, description: 'Actions of this kind.' }) kind?:
    | keyof typeof ActionKind
    | null
  @Field(() => ActionState, {
    nullable: true,
    description: 'Actions in this state (FAILED includes refused attempts).',
  })
  state?: keyof typeof ActionState | null
  @Field(() => ID, { nullable: true, description: 'Actions about this task, by its global id (`Task.id`).' }) task?:
    | string
    | null
}
