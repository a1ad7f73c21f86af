import { Counter, Gauge, Histogram, Registry } from 'prom-client'

/**
 * Every Prometheus metric livegate exports, on one registry per gateway (tests start several
 * gateways in one process). Parts that measure something are handed this object; `/metrics`
 * renders it.
 */
export interface Metrics {
  registry: Registry
  /**
   * Callbacks judged, by notification type (`unknown` before it is read) and verdict (`kept`, `duplicate`, `spooled`,
   * or the refusal code).
   */
  callbacks: Counter<'type' | 'verdict'>
  /** Seconds from a callback's arrival to its answer. */
  ingestSeconds: Histogram<'outcome'>
  /** Callbacks waiting in the spool for the database. */
  spoolDepth: Gauge
  /** Open subscriptions, by field. */
  subscriptions: Gauge<'field'>
  /** Seconds a task_list poll took, by outcome (`ok` or the failure kind). */
  upstreamPollSeconds: Histogram<'service_code' | 'outcome'>
  /** Failed task_list polls, by kind. */
  upstreamErrors: Counter<'service_code' | 'kind'>
  /** Failed task_list polls in a row, as stored (every instance reports the shared state). */
  upstreamConsecutiveFailures: Gauge<'service_code'>
  /** 1 while this instance holds the lease to poll a service code, else 0. */
  upstreamLeaseHeld: Gauge<'service_code'>
  /** Seconds a GraphQL operation took, by operation name (`anonymous` when unnamed) and type. */
  graphqlSeconds: Histogram<'operation' | 'type'>
  /** GraphQL requests over HTTP answered by the core's prepared path (a query Apollo had answered before). */
  graphqlPrepared: Counter
  /** Seconds from a callback's arrival to its fold into the task and user states being committed. */
  projectionLagSeconds: Histogram
  /** The projector's passes, by outcome: `folded`, `empty`, or `standby` (another instance held the lock). */
  projectorPasses: Counter<'outcome'>
  /** Callbacks the projector set aside unfolded, the database having refused their values, by SQLSTATE. */
  projectorSetAside: Counter<'service_code' | 'reason'>
  /** What `list_files` answers held that the catalogue cannot: files or values left out, by reason. */
  archiveLeftOut: Counter<'service_code' | 'what' | 'reason'>
  actions: Counter<'kind' | 'state'>
  /** Callers admitted or refused, by method (`key`, `token`, `local`, `none`) and outcome (`accepted` or the reason). */
  auth: Counter<'method' | 'outcome'>
  /** Seconds one signed request to the cloud took, by operation and outcome (`ok` or the failure kind). */
  cloudRequestSeconds: Histogram<'operation' | 'outcome'>
}

/** A fresh set of metrics on a registry of its own. */
export function createMetrics(): Metrics {
  const registry = new Registry()
  const registers = [registry]
  return {
    registry,
    callbacks: new Counter({
      name: 'livegate_callbacks_total',
      help: 'Callbacks judged, by type and verdict.',
      labelNames: ['type', 'verdict'],
      registers,
    }),
    ingestSeconds: new Histogram({
      name: 'livegate_ingest_seconds',
      help: 'Seconds from a callback arriving to its answer.',
      labelNames: ['outcome'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    spoolDepth: new Gauge({
      name: 'livegate_spool_depth',
      help: 'Callbacks kept in the spool, waiting for the database.',
      registers,
    }),
    subscriptions: new Gauge({
      name: 'livegate_subscriptions',
      help: 'Open subscriptions, by field.',
      labelNames: ['field'],
      registers,
    }),
    upstreamPollSeconds: new Histogram({
      name: 'livegate_upstream_poll_seconds',
      help: 'Seconds a task_list poll took.',
      labelNames: ['service_code', 'outcome'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    cloudRequestSeconds: new Histogram({
      name: 'livegate_cloud_request_seconds',
      help: 'Seconds one signed request to the cloud took, by operation and outcome.',
      labelNames: ['operation', 'outcome'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    upstreamErrors: new Counter({
      name: 'livegate_upstream_errors_total',
      help: 'Failed task_list polls, by kind.',
      labelNames: ['service_code', 'kind'],
      registers,
    }),
    upstreamConsecutiveFailures: new Gauge({
      name: 'livegate_upstream_consecutive_failures',
      help: 'Failed task_list polls in a row since the last success.',
      labelNames: ['service_code'],
      // Every worker of `serve --workers N` reads the same stored count: the whole is not their sum.
      aggregator: 'max',
      registers,
    }),
    upstreamLeaseHeld: new Gauge({
      name: 'livegate_upstream_lease_held',
      help: '1 while this instance polls the service code.',
      labelNames: ['service_code'],
      registers,
    }),
    graphqlSeconds: new Histogram({
      name: 'livegate_graphql_seconds',
      help: 'Seconds a GraphQL operation took, by operation name.',
      labelNames: ['operation', 'type'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    graphqlPrepared: new Counter({
      name: 'livegate_graphql_prepared_total',
      help: 'GraphQL requests over HTTP answered by the prepared route, without Apollo.',
      registers,
    }),
    projectionLagSeconds: new Histogram({
      name: 'livegate_projection_lag_seconds',
      help: 'Seconds from a callback arriving to its fold into the graph being committed.',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    actions: new Counter({
      name: 'livegate_actions_total',
      help: 'Actions asked for through livegate, by kind and how they ended (SUCCEEDED, FAILED, REFUSED).',
      labelNames: ['kind', 'state'],
      registers,
    }),
    auth: new Counter({
      name: 'livegate_auth_total',
      help: 'Callers admitted or refused, by method (key, token, local, none) and outcome (accepted or the reason).',
      labelNames: ['method', 'outcome'],
      registers,
    }),
    projectorPasses: new Counter({
      name: 'livegate_projector_passes_total',
      help: 'Projector passes, by outcome: folded, empty, or standby (another instance folds).',
      labelNames: ['outcome'],
      registers,
    }),
    projectorSetAside: new Counter({
      name: 'livegate_projector_set_aside_total',
      help: 'Callbacks the projector set aside unfolded (kept in the log): the database refused their values.',
      labelNames: ['service_code', 'reason'],
      registers,
    }),
    archiveLeftOut: new Counter({
      name: 'livegate_archive_left_out_total',
      help: 'What list_files answers held that the catalogue cannot: files or values (what) left out, by reason.',
      labelNames: ['service_code', 'what', 'reason'],
      registers,
    }),
  }
}

/** The Prometheus metrics of the history and the push-vs-poll reconciliation. */
export interface HistoryMetrics {
  /** Callbacks the task list showed were due and that did not come within the grace, by kind (`start`, `end`). */
  callbacksMissing: Counter<'service_code' | 'kind'>
  /** Seconds from a callback's signed timestamp to its arrival. */
  callbackDelay: Histogram<'service_code'>
  /** Raw samples written. */
  samples: Counter<'service_code'>
}

const byRegistry = new WeakMap<Registry, HistoryMetrics>()

/** The history's metrics on a gateway's registry, made once per registry. */
export function historyMetrics(registry: Registry): HistoryMetrics {
  let metrics = byRegistry.get(registry)
  if (!metrics) {
    const registers = [registry]
    metrics = {
      callbacksMissing: new Counter({
        name: 'livegate_callbacks_missing_total',
        help:
          'Callbacks found missing: a task listed live with no type 0 within the grace (kind="start"), or gone ' +
          'from the list with no type 1 (kind="end").',
        labelNames: ['service_code', 'kind'],
        registers,
      }),
      callbackDelay: new Histogram({
        name: 'livegate_callback_delay_seconds',
        help: "Seconds from a callback's signed timestamp (the service's clock) to its arrival.",
        labelNames: ['service_code'],
        buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
        registers,
      }),
      samples: new Counter({
        name: 'livegate_samples_total',
        help: 'Task samples written, one per listed task per task_list answer.',
        labelNames: ['service_code'],
        registers,
      }),
    }
    byRegistry.set(registry, metrics)
  }
  return metrics
}
