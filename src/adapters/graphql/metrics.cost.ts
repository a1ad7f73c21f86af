import { getNamedType } from 'graphql'
import type { ComplexityEstimator } from 'graphql-query-complexity'
import { MAX_POINTS } from './metrics.window.js'

const STEP_MS: Record<string, number> = { MINUTE: 60_000, HOUR: 3_600_000 }
const DEFAULT_SPAN_MS = 86_400_000

/**
 * The cost of a series field: its selection once per point it may return. RAW counts the most a
 * series may hold (its spacing is the poll interval, which the limits do not know); the rollups
 * count the points of the window asked, or of the default day.
 */
export function metricsEstimator(): ComplexityEstimator {
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
