import { getNamedType } from 'graphql'
import type { ComplexityEstimator } from 'graphql-query-complexity'
import type { Config } from '../../../config/config.schema.js'
import type { MetricStep } from '../../../storage/history/audience.queries.js'
import { badUserInput } from '../graphql.errors.js'

/** The most points one series may have. */
export const MAX_POINTS = 10_000

const MINUTE = 60_000
const HOUR = 3_600_000
const DAY = 24 * HOUR

/** How far apart a step's points are: RAW by the poll interval. */
export function stepMs(step: MetricStep, pollIntervalMs: number): number {
  if (step === 'MINUTE') return MINUTE
  if (step === 'HOUR') return HOUR
  return pollIntervalMs > 0 ? pollIntervalMs : 5000
}

/** The window a series covers when the caller gives no bound: a day, at most MAX_POINTS of its step. */
export function defaultSpanMs(step: MetricStep, pollIntervalMs: number): number {
  return Math.min(DAY, MAX_POINTS * stepMs(step, pollIntervalMs))
}

/**
 * The `[from, to)` of a series, as asked or by default (`to`: `life.end` else now; `from`: the
 * default span before it, not before `life.start`), `from` moved back to the start of its
 * step's bucket for the rollups, refused with BAD_USER_INPUT naming the
 * argument when `from` is after `to`, when it would hold more than MAX_POINTS points of its step,
 * or when the step is finer than what is kept that far back.
 */
export function audienceWindow(
  args: { step: MetricStep; from?: Date | null | undefined; to?: Date | null | undefined },
  config: Pick<Config, 'history' | 'upstream'>,
  now: number,
  life: { start?: number | null; end?: number | null } = {},
): { from: Date; to: Date } {
  const every = stepMs(args.step, config.upstream.pollIntervalMs)
  const kept =
    args.step === 'RAW'
      ? config.history.rawRetention
      : args.step === 'MINUTE'
        ? config.history.minuteRetention
        : config.history.hourRetention
  const to = args.to?.getTime() ?? life.end ?? now
  // A default start never reaches past what the step keeps (an empty series rather than an error).
  const from =
    args.from?.getTime() ??
    Math.min(
      to,
      Math.max(to - defaultSpanMs(args.step, config.upstream.pollIntervalMs), life.start ?? -Infinity, now - kept),
    )
  if (from > to)
    throw badUserInput(`from (${new Date(from).toISOString()}) is after to (${new Date(to).toISOString()}).`, 'from')
  const points = Math.ceil((to - from) / every)
  if (points > MAX_POINTS) {
    throw badUserInput(
      `The window from ${new Date(from).toISOString()} to ${new Date(to).toISOString()} holds up to ${points}` +
        ` points of step ${args.step}; at most ${MAX_POINTS} are allowed: narrow it, or use a coarser step.`,
      'from',
    )
  }
  if (args.step !== 'HOUR' && from < now - kept) {
    throw badUserInput(
      `Step ${args.step} is kept for ${Math.round(kept / HOUR)} h, and from reaches further back: use a coarser ` +
        `step for this window.`,
      'step',
    )
  }
  // A rollup's point stands at the start of its bucket, which starts before a task that began
  // inside it: the window starts at the bucket that holds `from`, or the first bucket is lost.
  return { from: new Date(args.step === 'RAW' ? from : Math.floor(from / every) * every), to: new Date(to) }
}

const STEP_MS: Record<string, number> = { MINUTE: 60_000, HOUR: 3_600_000 }
const DEFAULT_SPAN_MS = 86_400_000

/**
 * The cost of a series field: its selection once per point it may return. RAW counts the most a
 * series may hold (its spacing is the poll interval, which the limits do not know); the rollups
 * count the points of the window asked, or of the default day.
 */
export function audienceEstimator(): ComplexityEstimator {
  return ({ field, args, childComplexity }) => {
    const type = getNamedType(field.type).name
    if (type !== 'MetricPoint' && type !== 'ServiceMetricPoint') return undefined
    const step = typeof args.step === 'string' ? args.step : 'MINUTE'
    const every = STEP_MS[step]
    let points = MAX_POINTS
    if (every !== undefined) {
      const from = args.from instanceof Date ? args.from.getTime() : undefined
      const to = args.to instanceof Date ? args.to.getTime() : Date.now()
      const span = from === undefined ? DEFAULT_SPAN_MS : Math.max(0, to - from)
      points = Math.min(MAX_POINTS, Math.max(1, Math.ceil(span / every)))
    }
    return 1 + childComplexity * points
  }
}
