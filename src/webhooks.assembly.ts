import { type DestinationStream, type Logger, type LoggerOptions, pino } from 'pino'
import type { Config } from './config/config.schema.js'
import { openDatabase } from './storage/database.client.js'
import { createMetrics } from './work/metrics.registry.js'
import { ChannelListener } from './work/channel.listener.js'
import { buildWebhooks } from './gateway.parts.js'
import { startUnits, stopUnits, type Unit } from './work/wake.scheduler.js'
import { joinCluster, type ClusterMessage } from './adapters/ops/cluster.link.js'
import { loggerOptions } from './adapters/ops/log.redaction.js'
import { probeReadiness } from './adapters/ops/readiness.probe.js'

/**
 * The webhook worker of `serve --workers N` (with endpoints configured): a process that listens
 * on no port and runs only the outbox, the enqueuer that puts events in line and a delivery worker
 * per endpoint, for every HTTP worker of the cluster. The HTTP workers start with
 * `deliverWebhooks: false`, so a signature, a POST or a body's serialization never shares a turn
 * of the event loop with the callback route. Replayed, switched and newly enqueued deliveries reach
 * it over the webhook channel, as they reach another instance.
 */

/** A running webhook worker, as `serve` sees it. */
export interface RunningWebhookWorker {
  log: Logger
  close(): Promise<void>
}

/** What {@link startWebhookWorker} is told besides the configuration. */
export interface WebhookWorkerOptions {
  databaseUrlOrigin?: string
  tty?: boolean
  /** Where log lines go; standard output otherwise. */
  logStream?: DestinationStream
}

// The database's answer within this, as `/readyz` asks of an HTTP worker.
const READINESS_TIMEOUT_MS = 2000

/**
 * Opens the database (the first HTTP worker has migrated it), starts the webhook service, answers
 * the primary's gathers of `/metrics` (its attempts, lags and gauges are the cluster's), and tells
 * the primary it delivers. Any failure closes what was opened and rejects.
 */
export async function startWebhookWorker(
  config: Config,
  options: WebhookWorkerOptions = {},
): Promise<RunningWebhookWorker> {
  const settings = loggerOptions(config, options.logStream, options.tty ?? false) as LoggerOptions & {
    stream?: DestinationStream
  }
  const log = settings.stream ? pino(settings, settings.stream) : pino(settings)
  const database = await openDatabase({
    url: config.database.url,
    directUrl: config.database.directUrl,
    dataDir: config.database.dataDir,
    ...(options.databaseUrlOrigin ? { urlOrigin: options.databaseUrlOrigin } : {}),
    command: 'serve',
    // The enqueuer's pass, a claim per endpoint and the outcomes' batches: a few at a time.
    maxConnections: Math.max(2, config.webhooks.endpoints.length + 2),
  })
  const metrics = createMetrics()
  const channels = new ChannelListener({ database, log })
  const webhooks = buildWebhooks(config, database, channels, log, metrics, true)
  // The one ordered list of this process's units: started forwards, stopped in the reverse.
  const units: Unit[] = [
    { name: 'channels', start: () => channels.start(), stop: () => channels.stop() },
    { name: 'webhooks', start: () => webhooks.start(), stop: () => webhooks.stop() },
  ]
  try {
    await startUnits(units)
  } catch (error) {
    await stopUnits(units).catch(() => {})
    await database.close().catch(() => {})
    throw error
  }
  joinCluster({
    metrics: () => metrics.registry.getMetricsAsJSON(),
    readiness: async () =>
      (await probeReadiness({ db: database.db, timeoutMs: READINESS_TIMEOUT_MS, realtime: channels })).report,
  })
  process.send?.({ livegate: 'delivering' } satisfies ClusterMessage)
  log.info(
    { endpoints: config.webhooks.endpoints.length },
    "webhook worker: puts every worker's events in line and delivers them; the HTTP workers deliver none",
  )
  return {
    log,
    async close() {
      await stopUnits(units)
      await database.close()
    },
  }
}
