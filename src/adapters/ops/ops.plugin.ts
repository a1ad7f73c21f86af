import type { FastifyPluginAsync } from 'fastify'
import { collectDefaultMetrics } from 'prom-client'
import type { Config } from '../../config/config.schema.js'
import type { Db } from '../../storage/database.client.js'
import type { Metrics } from '../../work/metrics.registry.js'
import { probeReadiness, type SpoolDepth } from './readiness.probe.js'
import { staleAfterMs } from '../../storage/history/upstream-status.statements.js'
import { joinCluster } from './cluster.link.js'

/** Open subscriptions by kind, as the realtime engine counts them. */
export interface SubscriptionCounts {
  readonly subscriptions: {
    notifications: number
    tasks: number
    actions?: number
    incidents?: number
    samples?: number
    timelines?: number
  }
  /** Whether the engine hears its channels. */
  readonly listening: boolean
}

/** What the operations routes are built from. */
export interface OpsPluginOptions {
  config: Pick<Config, 'ops' | 'upstream'>
  db: Db
  metrics: Metrics
  /** Counted into `livegate_subscriptions` at every scrape. */
  hub?: SubscriptionCounts | undefined
  /** The task_list poller, whose service codes `/readyz` reports on. */
  poller?: { readonly serviceCodes: readonly string[] } | undefined
  /** The local spool of callbacks the database could not take, when there is one. */
  spool?: SpoolDepth | undefined
  /** The replicas reads are routed to, whose states `/readyz` reports (with `database.readUrls`). */
  replicas?: (() => ReadonlyArray<{ name: string; state: string; lagMs: number }>) | undefined
}

// The GraphQL field each of the hub's counts belongs to: the `field` label's values.
const SUBSCRIPTION_FIELDS = {
  notifications: 'notificationReceived',
  tasks: 'taskChanged',
  actions: 'actionChanged',
  incidents: 'incidentChanged',
  samples: 'metricsSampled',
  timelines: 'taskTimeline',
} as const

/**
 * Operations: `/healthz` (the process answers), `/readyz` (the database answers, with the spool
 * and task_list health beside it), and `/metrics` (Prometheus text).
 */
export const opsPlugin: FastifyPluginAsync<OpsPluginOptions> = async (app, options) => {
  const { config, db, metrics, hub, poller, spool } = options
  collectDefaultMetrics({ register: metrics.registry })

  app.get('/healthz', async (_request, reply) => reply.header('cache-control', 'no-store').send({ ok: true }))

  // Probes come every few seconds: the log says when readiness changes, not at every probe.
  let wasReady = true
  const readiness = async () => {
    const { report, failure } = await probeReadiness({
      db,
      timeoutMs: config.ops.readyTimeoutMs,
      spool,
      serviceCodes: poller?.serviceCodes,
      staleMs: poller ? staleAfterMs(config.upstream) : 0,
      realtime: hub,
      replicas: options.replicas,
    })
    if (report.ready !== wasReady) {
      if (report.ready) app.log.info({ latencyMs: report.database.latencyMs }, 'ready again')
      else if (!report.database.ok)
        app.log.warn({ err: failure, code: report.database.error }, 'not ready: the database does not answer')
      else app.log.warn('not ready: the realtime engine does not hear its channel')
      wasReady = report.ready
    }
    return report
  }
  // The counts kept elsewhere are read into their gauges at each scrape.
  const ownMetrics = () => {
    if (hub) {
      const counts = hub.subscriptions
      for (const [kind, field] of Object.entries(SUBSCRIPTION_FIELDS)) {
        metrics.subscriptions.set({ field }, counts[kind as keyof typeof SUBSCRIPTION_FIELDS] ?? 0)
      }
    }
    if (spool) metrics.spoolDepth.set(spool.depth())
    return metrics.registry
  }
  // In a worker of `serve --workers N`, both answer for every worker (the primary gathers them).
  const cluster = joinCluster({ metrics: () => ownMetrics().getMetricsAsJSON(), readiness })

  app.get('/readyz', async (_request, reply) => {
    const report = cluster ? await cluster.ask('readiness') : await readiness()
    return reply
      .code(report.ready ? 200 : 503)
      .header('cache-control', 'no-store')
      .send(report)
  })

  app.get('/metrics', async (_request, reply) => {
    const { body, contentType } = cluster
      ? await cluster.ask('metrics')
      : { body: await ownMetrics().metrics(), contentType: metrics.registry.contentType }
    return reply.header('cache-control', 'no-store').type(contentType).send(body)
  })
}
