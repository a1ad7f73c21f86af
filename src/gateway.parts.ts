import type { FastifyBaseLogger } from 'fastify'
import type { Config } from './config/config.schema.js'
import type { Database } from './storage/database.client.js'
import { ActionRunner } from './work/outbound/action.runner.js'
import { ActionClient } from './work/outbound/action.client.js'
import { CloudClient } from './work/cloud.client.js'
import { CallbackStore } from './work/ingest/callback.store.js'
import { RealtimeEngine } from './work/realtime/realtime.engine.js'
import { GraphProjector } from './work/graph/graph.projector.js'
import { AudienceHistory } from './work/graph/audience.history.js'
import { createMetrics, type Metrics } from './work/metrics.registry.js'
import { RetentionJob, retentionSettings } from './work/retention.job.js'
import { ChannelListener } from './work/channel.listener.js'
import { WebhookService } from './work/outbound/webhook.service.js'
import { IncidentWatch } from './work/alerts/incident.watch.js'
import { CallbackSpool } from './work/ingest/spool/callback.spool.js'
import { spoolLocation } from './work/ingest/spool/spool.owner.js'
import { SpoolReplayer } from './work/ingest/spool/spool.replayer.js'
import { pollerFor, type TaskListPoller } from './work/graph/task-list.poller.js'
import { type ArchivePoller, archivePollerFor } from './work/graph/archive.poller.js'
import { RecordingMissingWatch } from './work/graph/recording-missing.watch.js'
import { webhookShapes } from './adapters/graphql/reads/webhook.shapes.js'
import { startUnits, stopUnits, type Unit } from './work/wake.scheduler.js'
import { ReplicaRouter, replicaName } from './work/replica.router.js'
import { openReadPool } from './storage/replica.queries.js'
import { MAX_REPLICA_LAG_MS } from './config/config.schema.js'

/**
 * The units of work of a gateway process, built from the configuration and the open database, and
 * started and stopped in one order: a part may rely on the parts started before it, and stops
 * after the parts that rely on it.
 */

/** The units of work of a running gateway. */
export interface GatewayParts {
  metrics: Metrics
  channels: ChannelListener
  /** The one signed client of the cloud: task_list, the actions and the archive call through it. */
  cloud: CloudClient
  spool: CallbackSpool
  store: CallbackStore
  replayer: SpoolReplayer
  poller: TaskListPoller | undefined
  /** Asks each code's archive (`list_files`) into the catalogue of recordings. */
  archive: ArchivePoller | undefined
  /** Tells a task ended with `live_only` 0 and no recording after the grace (`recording.missing`). */
  missing: RecordingMissingWatch
  projector: GraphProjector
  hub: RealtimeEngine
  /** Audience and health over time: the poller samples each answer into it. */
  history: AudienceHistory
  retention: RetentionJob
  /** Acts on the cloud (stopTask, sendMessage), audited. */
  actions: ActionRunner
  /** Signed webhooks of the log and of what is derived: the outbox's enqueuer and delivery workers. */
  webhooks: WebhookService
  /** Alert rules: opens, resolves and tells incidents. */
  incidents: IncidentWatch
  /** Where reads go: streaming replicas (`database.readUrls`) while they keep up, else the primary. */
  reads: ReplicaRouter
}

/** Builds the units of work; none runs until {@link startParts}. */
export async function buildParts(
  config: Config,
  database: Database,
  log: FastifyBaseLogger,
  options: { now?: (() => Date) | undefined; deliverWebhooks?: boolean | undefined },
): Promise<GatewayParts> {
  // One registry per gateway: tests run several gateways in one process.
  const metrics = createMetrics()
  // Callbacks the database cannot take wait in a local spool, and the replayer puts them back.
  const spool = await CallbackSpool.open({
    ...spoolLocation(config),
    maxBytes: config.spool.maxBytes,
    onDepth: (depth) => metrics.spoolDepth.set(depth),
  })
  const store = new CallbackStore(database.db, {
    refusedMaxRows: config.ingest.refusedMaxRows,
    onDoorbellError: (error) =>
      log.warn(
        { err: error },
        'the log doorbell could not be rung; readers will find the callbacks at their next look',
      ),
  })
  const channels = new ChannelListener({ database, log })
  const history = new AudienceHistory({ config, registry: metrics.registry })
  const headerPrefix = config.ingest.signatureHeaderPrefixes[0]
  const cloud = new CloudClient({ services: config.services, headerPrefix, metrics })
  const actionClient = new ActionClient({
    services: config.services,
    timeoutMs: config.upstream.actionTimeoutMs,
    cloud,
  })
  const replicaPools = (config.database.readUrls ?? []).map((url) => ({
    name: replicaName(url),
    ...openReadPool(url, 10),
  }))
  return {
    metrics,
    reads: new ReplicaRouter({
      primary: database.db,
      replicas: replicaPools,
      maxLagMs: config.database.maxReplicaLagMs ?? MAX_REPLICA_LAG_MS,
      registry: metrics.registry,
      log,
    }),
    channels,
    cloud,
    spool,
    store,
    replayer: new SpoolReplayer({ spool, store, log }),
    history,
    poller: pollerFor(config, database.db, log, undefined, metrics, {
      sampler: history.sampler,
      ...(options.now ? { now: options.now } : {}),
      cloud,
    }),
    archive: archivePollerFor(config, database.db, cloud, log, metrics),
    missing: new RecordingMissingWatch({ config, database, log, now: options.now }),
    // The graph is a projection of the log, folded after each acknowledgement (graph.projector.ts).
    // The starts and ends a pass makes are kept for the webhooks only when some endpoint may want them.
    projector: new GraphProjector({
      database,
      channels,
      log,
      metrics,
      derivedEvents: config.webhooks.endpoints.length > 0,
    }),
    hub: new RealtimeEngine({ database, channels, log, subscriberBuffer: config.realtime.subscriberBuffer }),
    retention: new RetentionJob({
      ...retentionSettings(config),
      db: database.db,
      log,
      now: options.now,
      history: history.polled ? history.retention : undefined,
    }),
    actions: new ActionRunner({ db: database.db, config, log, metrics, client: actionClient }),
    webhooks: buildWebhooks(config, database, channels, log, metrics, options.deliverWebhooks !== false),
    incidents: new IncidentWatch({ config, database, channels, log, registry: metrics.registry, now: options.now }),
  }
}

/**
 * The webhook service of a gateway, or of the webhook worker of `serve --workers N`
 * (webhooks.assembly.ts). Bodies are shaped as GraphQL shapes its types (adapters), handed down to the work floor.
 */
export function buildWebhooks(
  config: Config,
  database: Database,
  channels: ChannelListener,
  log: FastifyBaseLogger,
  metrics: Metrics,
  deliver: boolean,
): WebhookService {
  return new WebhookService({
    config,
    database,
    channels,
    log,
    registry: metrics.registry,
    shapes: webhookShapes,
    deliver,
  })
}

/**
 * The one ordered list of a gateway's units of work: started forwards, stopped in the reverse. The
 * spool and the cloud client are open from the build on, so they come first and close last.
 */
export function partUnits(parts: GatewayParts): Unit[] {
  return [
    { name: 'spool', stop: () => parts.spool.close() },
    { name: 'cloud', stop: () => parts.cloud.close() },
    { name: 'reads', start: () => parts.reads.start(), stop: () => parts.reads.stop() },
    { name: 'channels', start: () => parts.channels.start(), stop: () => parts.channels.stop() },
    { name: 'replayer', start: () => parts.replayer.start(), stop: () => parts.replayer.stop() },
    { name: 'poller', start: () => parts.poller?.start(), stop: () => parts.poller?.stop() },
    { name: 'archive', start: () => parts.archive?.start(), stop: () => parts.archive?.stop() },
    { name: 'missing', start: () => parts.missing.start(), stop: () => parts.missing.stop() },
    { name: 'projector', start: () => parts.projector.start(), stop: () => parts.projector.stop() },
    { name: 'hub', start: () => parts.hub.start(), stop: () => parts.hub.stop() },
    // Stopping ends the cloud calls under way at once.
    { name: 'actions', start: () => parts.actions.start(), stop: () => parts.actions.close() },
    { name: 'webhooks', start: () => parts.webhooks.start(), stop: () => parts.webhooks.stop() },
    { name: 'incidents', start: () => parts.incidents.start(), stop: () => parts.incidents.stop() },
    { name: 'retention', start: () => parts.retention.start(), stop: () => parts.retention.stop() },
  ]
}

/** Starts the parts in their order ({@link partUnits}): each may rely on those before it. */
export function startParts(parts: GatewayParts): Promise<void> {
  return startUnits(partUnits(parts))
}

/** Stops the parts in the reverse order of their start: the spool is closed last. */
export function stopParts(parts: GatewayParts): Promise<void> {
  return stopUnits(partUnits(parts))
}
