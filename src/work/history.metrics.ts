import { Counter, Histogram, type Registry } from 'prom-client'

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
        help: 'Callbacks found missing: a task listed live with no type 0 within the grace (kind="start"), or gone from the list with no type 1 (kind="end").',
        labelNames: ['service_code', 'kind'],
        registers,
      }),
      callbackDelay: new Histogram({
        name: 'livegate_callback_delay_seconds',
        help: 'Seconds from a callback\'s signed timestamp (the service\'s clock) to its arrival.',
        labelNames: ['service_code'],
        buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
        registers,
      }),
      samples: new Counter({ name: 'livegate_samples_total', help: 'Task samples written, one per listed task per task_list answer.', labelNames: ['service_code'], registers }),
    }
    byRegistry.set(registry, metrics)
  }
  return metrics
}
