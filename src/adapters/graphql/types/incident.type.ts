import { Field, Float, ID, InputType, ObjectType, registerEnumType } from '../type-graphql.shim.js'
import { ConnectionType } from './connection.type.js'
import { Node } from './node.type.js'
import { DateTimeScalar } from './scalars.type.js'

/** How loud an incident is: its rule's `severity`. */
export const IncidentSeverity = { INFO: 'INFO', WARNING: 'WARNING', CRITICAL: 'CRITICAL' } as const
registerEnumType(IncidentSeverity, {
  name: 'IncidentSeverity',
  description: "An incident's severity, as its rule says (`alerts.rules[].severity`).",
  valuesConfig: {
    INFO: { description: 'Worth knowing.' },
    WARNING: { description: 'Worth a look (the default).' },
    CRITICAL: { description: 'Worth waking someone for.' },
  },
})

/** Where an incident stands. */
export const IncidentState = { OPEN: 'OPEN', ACKNOWLEDGED: 'ACKNOWLEDGED', RESOLVED: 'RESOLVED' } as const
registerEnumType(IncidentState, {
  name: 'IncidentState',
  description:
    'Where an incident stands in its life: opened by the data, acknowledged by someone, resolved by the data.',
  valuesConfig: {
    OPEN: { description: "Its rule's condition held for `for`; nobody has acknowledged it yet." },
    ACKNOWLEDGED: { description: 'Someone acknowledged it (`acknowledgeIncident`); it still resolves by the data.' },
    RESOLVED: { description: 'Its condition was false for `clearFor`, its task ended, or its rule was removed.' },
  },
})

// `id` and `task` are resolved by IncidentResolver from the stored row.
@ObjectType('Incident', {
  simpleResolvers: true,
  implements: Node,
  description:
    "An alert rule's condition that held for one task or service code for the rule's `for`: opened, " +
    'acknowledged, resolved. What made it true is read with `Task.metrics` (or `serviceMetrics`) from ' +
    '`startedAt` to `openedAt` (docs/alerts.md).',
})
export class Incident extends Node {
  @Field(() => String, { description: "The rule's `name`." }) rule!: string
  @Field(() => IncidentSeverity, { description: "The rule's severity." }) severity!: keyof typeof IncidentSeverity
  @Field(() => IncidentState, { description: 'Where it stands.' }) state!: keyof typeof IncidentState
  @Field(() => String, { description: 'The service code of its subject.' }) serviceCode!: string
  @Field(() => String, {
    description: 'One line a person reads, as it opened: "task TENANT_A/abc: health STARVING for 20 s".',
  })
  summary!: string
  @Field(() => Float, {
    nullable: true,
    description: 'The measured value when it opened (viewers, bits/s, a count); null for a state (health, stale).',
  })
  value!: number | null
  @Field(() => Float, { nullable: true, description: "The rule's `below` or `above`; null when it has none." })
  threshold!: number | null
  @Field(() => DateTimeScalar, { description: 'When the condition began to hold.' }) startedAt!: Date
  @Field(() => DateTimeScalar, { description: 'When it opened: the condition had held for `for`.' }) openedAt!: Date
  @Field(() => DateTimeScalar, { nullable: true, description: 'When it was acknowledged; null before.' })
  acknowledgedAt!: Date | null
  @Field(() => String, {
    nullable: true,
    description: "The API key's name that acknowledged it; null before, or for the local user.",
  })
  acknowledgedBy!: string | null
  @Field(() => String, { nullable: true, description: 'What the acknowledging operator noted.' }) note!: string | null
  @Field(() => DateTimeScalar, { nullable: true, description: 'When it resolved; null while open or acknowledged.' })
  resolvedAt!: Date | null
}

@ObjectType('IncidentConnection', { simpleResolvers: true, description: 'A page of incidents, newest first.' })
export class IncidentConnection extends ConnectionType('Incident', () => Incident) {}

@InputType('IncidentFilter', { description: 'Which incidents; every condition given must hold.' })
export class IncidentFilter {
  @Field(() => String, { nullable: true, description: 'Incidents of this service code.' }) serviceCode?: string | null
  @Field(() => String, { nullable: true, description: 'Incidents of this rule (its `name`).' }) rule?: string | null
  @Field(() => IncidentState, { nullable: true, description: 'Incidents in this state.' }) state?:
    | keyof typeof IncidentState
    | null
  @Field(() => ID, { nullable: true, description: 'Incidents of this task, by its global id (`Task.id`).' }) task?:
    | string
    | null
}
