import type { ApolloServerPlugin, BaseContext } from '@apollo/server'
import type { Metrics } from '../../work/metrics.registry.js'

/** The label of an operation sent without a name. */
export const ANONYMOUS_OPERATION = 'anonymous'
/** The label every operation name past the cap shares. */
export const OTHER_OPERATIONS = 'other'
/** The label of a request that never resolved to an operation (unparsable or invalid). */
export const INVALID_OPERATION_TYPE = 'invalid'

/** How {@link graphqlMetricsPlugin} bounds its labels. */
export interface OperationLabelOptions {
  /** Distinct operation names kept as labels; later new names are counted as `other`. */
  maxOperations?: number
  /** Longer names are cut, so one client cannot make a huge label either. */
  maxNameLength?: number
}

/**
 * Bounds the `operation` label: operation names come from clients, and every distinct value is a
 * new time series the scraper keeps. The first `maxOperations` names are kept as they are.
 */
export class OperationLabels {
  private readonly seen = new Set<string>()
  private readonly maxOperations: number
  private readonly maxNameLength: number

  constructor(options: OperationLabelOptions = {}) {
    this.maxOperations = options.maxOperations ?? 200
    this.maxNameLength = options.maxNameLength ?? 100
  }

  /** The label for an operation name (`undefined` or `null` for an unnamed one). */
  label(name: string | null | undefined): string {
    if (!name) return ANONYMOUS_OPERATION
    const cut = name.slice(0, this.maxNameLength)
    if (this.seen.has(cut)) return cut
    if (this.seen.size >= this.maxOperations) return OTHER_OPERATIONS
    this.seen.add(cut)
    return cut
  }
}

/**
 * Apollo plugin timing every GraphQL request over HTTP, from its arrival to its answer, into
 * `livegate_graphql_seconds{operation, type}`. Without metrics it does nothing, so the endpoint
 * can be built without them (tests, embedding).
 */
export function graphqlMetricsPlugin<C extends BaseContext>(
  metrics: Pick<Metrics, 'graphqlSeconds'> | undefined,
  // `labels` when the request core counts operations into the same series (request.pipeline.ts).
  options: OperationLabelOptions & { labels?: OperationLabels | undefined } = {},
): ApolloServerPlugin<C> {
  if (!metrics) return {}
  const labels = options.labels ?? new OperationLabels(options)
  return {
    async requestDidStart() {
      const startedAt = performance.now()
      let operation: string | undefined
      let type = INVALID_OPERATION_TYPE
      return {
        async didResolveOperation({ operationName, operation: resolved }) {
          operation = labels.label(operationName)
          type = resolved?.operation ?? INVALID_OPERATION_TYPE
        },
        async willSendResponse() {
          const seconds = (performance.now() - startedAt) / 1000
          metrics.graphqlSeconds.observe({ operation: operation ?? ANONYMOUS_OPERATION, type }, seconds)
        },
      }
    },
  }
}
