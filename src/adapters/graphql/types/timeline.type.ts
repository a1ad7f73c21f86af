import { Field, ObjectType, registerEnumType } from '../type-graphql.shim.js'
import { ConnectionType } from './connection.type.js'
import { DateTimeScalar } from './scalars.type.js'

/** What a timeline entry is about. */
export const TimelineKind = {
  CALLBACK: 'CALLBACK',
  RECONNECT: 'RECONNECT',
  LISTED: 'LISTED',
  AUDIENCE: 'AUDIENCE',
  STATUS: 'STATUS',
  HEALTH: 'HEALTH',
  CALLBACK_MISSING: 'CALLBACK_MISSING',
  INCIDENT: 'INCIDENT',
  ACTION: 'ACTION',
  RECORDING: 'RECORDING',
  WEBHOOK: 'WEBHOOK',
} as const
registerEnumType(TimelineKind, {
  name: 'TimelineKind',
  description: 'What a `TimelineEntry` is about.',
  valuesConfig: {
    CALLBACK: { description: 'A callback about the task, as the cloud sent it (types 0, 1, 8, 9).' },
    RECONNECT: { description: 'A type 15 callback: the live waits for its client to reconnect, or resumed.' },
    LISTED: {
      description:
        'The task list named the task: a run of answers that said nothing new, folded into one entry (the first ' +
        'run is the first time a list named it; the last run ends at the last).',
    },
    AUDIENCE: { description: "The audience's peak over the task's life, or a drop to half or less." },
    STATUS: { description: 'The task started or ended (its `status` changed).' },
    HEALTH: { description: 'Its health changed (its input stalled, or grows again).' },
    CALLBACK_MISSING: { description: 'A callback the cloud never sent, concluded after the grace.' },
    INCIDENT: { description: 'An incident about the task opened, was acknowledged, or resolved.' },
    ACTION: { description: 'An action on the task was asked, and how it ended.' },
    RECORDING: { description: 'A recording told by the callback, listed by the archive, or told missing.' },
    WEBHOOK: { description: 'A webhook delivery of an event about the task, and its outcome.' },
  },
})

/** Where the fact behind an entry came from. */
export const TimelineSource = { PUSHED: 'PUSHED', POLLED: 'POLLED', INFERRED: 'INFERRED', DONE: 'DONE' } as const
registerEnumType(TimelineSource, {
  name: 'TimelineSource',
  description: 'Where the fact behind a `TimelineEntry` came from.',
  valuesConfig: {
    PUSHED: { description: 'The cloud pushed it: a callback.' },
    POLLED: { description: 'The cloud answered it to a poll: a `task_list` or `list_files` answer.' },
    INFERRED: {
      description: 'livegate concluded it: an end or a callback the cloud never sent, a stall, a missing recording.',
    },
    DONE: { description: 'Something done: an action, an acknowledgement, a webhook delivery.' },
  },
})

// `subject` is resolved by TimelineEntryResolver from the entry's subject key.
@ObjectType('TimelineEntry', {
  simpleResolvers: true,
  description:
    "One fact of a task's story, read from what livegate keeps of it (callbacks, task list answers, derived " +
    'events, incidents, actions, recordings, webhook deliveries), with where it came from.',
})
export class TimelineEntry {
  @Field(() => DateTimeScalar, { description: 'When it happened (a folded run of answers: its first answer).' })
  at!: Date

  @Field(() => TimelineKind, { description: 'What it is about.' })
  kind!: keyof typeof TimelineKind

  @Field(() => TimelineSource, { description: 'Where the fact came from.' })
  source!: keyof typeof TimelineSource

  @Field(() => String, { description: 'What happened, in a line.' })
  summary!: string
}

@ObjectType('TimelineEntryConnection', {
  simpleResolvers: true,
  description: "A page of a task's timeline, oldest first.",
})
export class TimelineEntryConnection extends ConnectionType('TimelineEntry', () => TimelineEntry) {}
