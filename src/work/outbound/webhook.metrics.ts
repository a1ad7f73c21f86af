import { Counter, Gauge, Histogram, type Registry } from 'prom-client'

/** The Prometheus metrics of webhook delivery. */
export interface WebhookMetrics {
  /** Attempts, by endpoint and outcome: `delivered`, `retry`, `dead`. */
  attempts: Counter<'endpoint' | 'outcome'>
  /** Seconds from an event being put in line for an endpoint to its 2xx answer. */
  deliverySeconds: Histogram<'endpoint'>
  /** Deliveries in line (pending or retrying), per endpoint, as stored. */
  pending: Gauge<'endpoint'>
  /** Dead letters kept, per endpoint, as stored. */
  deadLetters: Gauge<'endpoint'>
  /** 1 while an endpoint is switched off, else 0. */
  disabled: Gauge<'endpoint'>
}

const byRegistry = new WeakMap<Registry, WebhookMetrics>()

/** Webhook metrics on a gateway's registry, made once per registry. */
export function webhookMetrics(registry: Registry): WebhookMetrics {
  let metrics = byRegistry.get(registry)
  if (!metrics) {
    const registers = [registry]
    metrics = {
      attempts: new Counter({
        name: 'livegate_webhook_attempts_total',
        help:
          'Webhook attempts, by endpoint and outcome: delivered, retry (failed, tried again later) or dead ' +
          '(failed, a dead letter).',
        labelNames: ['endpoint', 'outcome'],
        registers,
      }),
      deliverySeconds: new Histogram({
        name: 'livegate_webhook_delivery_seconds',
        help: 'Seconds from an event being put in line for an endpoint to its 2xx answer.',
        labelNames: ['endpoint'],
        buckets: [0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1, 2.5, 10, 60, 600, 3600],
        registers,
      }),
      // As stored, so every worker reports the same value: the largest, not the sum, across workers.
      pending: new Gauge({
        name: 'livegate_webhook_pending',
        help: 'Webhook deliveries in line (pending or retrying), per endpoint.',
        labelNames: ['endpoint'],
        aggregator: 'max',
        registers,
      }),
      deadLetters: new Gauge({
        name: 'livegate_webhook_dead_letters',
        help: 'Webhook dead letters kept, per endpoint.',
        labelNames: ['endpoint'],
        aggregator: 'max',
        registers,
      }),
      disabled: new Gauge({
        name: 'livegate_webhook_endpoint_disabled',
        help: '1 while a webhook endpoint is switched off (410, disableAfter, or an operator).',
        labelNames: ['endpoint'],
        aggregator: 'max',
        registers,
      }),
    }
    byRegistry.set(registry, metrics)
  }
  return metrics
}
