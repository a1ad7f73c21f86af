import { z } from 'zod'
import { duration } from './history.schema.js'

const DAY = 86_400_000

/** What a rule may watch (`when`); each names its subject before the dot. */
export const ALERT_SIGNALS = [
  'task.health',
  'task.viewers',
  'task.inputBitrate',
  'service.viewers',
  'upstream.stale',
  'service.callbacksMissing',
] as const

/** One signal a rule watches. */
export type AlertSignal = (typeof ALERT_SIGNALS)[number]

/** The health states a `task.health` rule may count (a task's ENDED resolves, HEALTHY is the all-clear). */
export const ALERT_HEALTH_STATES = ['STARVING', 'RECONNECTING', 'UNKNOWN'] as const

/** How loud an incident is. */
export const INCIDENT_SEVERITIES = ['INFO', 'WARNING', 'CRITICAL'] as const

/** One incident's severity. */
export type IncidentSeverity = (typeof INCIDENT_SEVERITIES)[number]

// Which of `is`, `below`, `above` each signal takes; a key a signal does not take stops the start,
// so a rule never silently watches something else than its author meant.
const TAKES: Readonly<Record<AlertSignal, readonly ('is' | 'below' | 'above')[]>> = {
  'task.health': ['is'],
  'task.viewers': ['below', 'above'],
  'task.inputBitrate': ['below', 'above'],
  'service.viewers': ['below', 'above'],
  'upstream.stale': [],
  'service.callbacksMissing': ['above'],
}

const ruleSchema = z
  .strictObject({
    /** Unique: what incidents, metrics and webhooks call the rule. */
    name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1 to 64 letters, digits, "_", "." or "-"'),
    when: z.enum(ALERT_SIGNALS),
    is: z.array(z.enum(ALERT_HEALTH_STATES)).min(1).optional(),
    below: z.number().finite().optional(),
    above: z.number().finite().optional(),
    /** How long the condition must hold before an incident opens. */
    for: duration(0, 7 * DAY, 0),
    /** How long it must be false before the incident resolves; the rule's `for` when absent. */
    clearFor: duration(0, 7 * DAY, 0)
      .unwrap()
      .optional(),
    serviceCodes: z.union([z.literal('*'), z.array(z.string().min(1)).min(1)]).default('*'),
    severity: z.enum(INCIDENT_SEVERITIES).default('WARNING'),
  })
  .superRefine((rule, ctx) => {
    const takes = TAKES[rule.when]
    for (const key of ['is', 'below', 'above'] as const) {
      if (rule[key] !== undefined && !takes.includes(key)) {
        const what = takes.length === 0 ? 'takes no threshold' : `takes only ${takes.map((k) => `"${k}"`).join(' or ')}`
        ctx.addIssue({ code: 'custom', path: [key], message: `"${rule.when}" ${what}` })
      }
    }
    const given = takes.filter((key) => rule[key] !== undefined)
    if (takes.length > 0 && given.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        path: [takes[0] as string],
        message: `"${rule.when}" needs exactly one of ${takes.map((k) => `"${k}"`).join(', ')}`,
      })
    }
  })

/** `alerts`: rules that open, resolve and tell incidents (docs/alerts.md). */
export const alertsSchema = z.strictObject({
  rules: z
    .array(ruleSchema)
    .max(1000)
    .default([])
    .superRefine((rules, ctx) => {
      const seen = new Set<string>()
      rules.forEach((rule, index) => {
        if (seen.has(rule.name))
          ctx.addIssue({ code: 'custom', path: [index, 'name'], message: `"${rule.name}" is configured twice` })
        seen.add(rule.name)
      })
    }),
})

/** A rule as the schema reads it. */
export type AlertRuleFile = z.output<typeof ruleSchema>

/** A rule as the evaluator uses it: durations in milliseconds, `clearFor` resolved. */
export interface AlertRule {
  name: string
  when: AlertSignal
  is?: readonly string[] | undefined
  below?: number | undefined
  above?: number | undefined
  forMs: number
  clearForMs: number
  serviceCodes: readonly string[] | '*'
  severity: IncidentSeverity
}

/** The configured rules in the evaluator's terms. */
export function alertRules(alerts: { rules: readonly AlertRuleFile[] }): AlertRule[] {
  return alerts.rules.map((rule) => ({
    name: rule.name,
    when: rule.when,
    is: rule.is,
    below: rule.below,
    above: rule.above,
    forMs: rule.for,
    clearForMs: rule.clearFor ?? rule.for,
    serviceCodes: rule.serviceCodes,
    severity: rule.severity,
  }))
}
