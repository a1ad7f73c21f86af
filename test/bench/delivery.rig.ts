import { openDatabase } from '../../src/storage/database.client.js'
import { deliveryPage, endpointStates } from '../../src/storage/outbound/webhook.queries.js'
import type { Db } from '../../src/storage/database.client.js'
import { metricValue, scrapeMetrics } from '../support/metrics.scrape.js'
import { WEBHOOK_SECRET } from '../support/receiver.process.js'
import { startBenchGateway } from './bench.gateway.js'
import type { BenchContext } from './bench.report.js'
import type { BenchReceiver } from './delivery.receiver.js'
import { BENCH_SERVICE } from './ingest.pool.js'
import { startServe } from './serve.process.js'

/** One database kind the delivery part runs on. */
export type DatabaseKind = 'PostgreSQL' | 'PGlite'

/** A webhook endpoint of a rig: its name and the receiver path it posts to. */
export interface RigEndpoint {
  name: string
  receiver: BenchReceiver
  /** Event patterns; every type by default. */
  events?: string[]
}

/** A livegate gateway started for the delivery part, with what waits for its endpoints. */
export interface Rig {
  url: string
  kind: DatabaseKind
  endpoints: string[]
  /** Deliveries in line (pending or retrying) and dead letters, summed over the endpoints. */
  waiting(): Promise<{ pending: number; dead: number }>
  /** Attempts by outcome over the endpoints, from the gateway's own metrics. */
  attempts(outcome: 'delivered' | 'retry' | 'dead'): Promise<number>
  /** The bodies put in line for one endpoint, newest first. */
  bodies(endpoint: string, limit: number): Promise<Array<{ eventId: string; body: string }>>
  close(): Promise<void>
}

/**
 * Starts livegate on a fresh database of the kind asked (the bench's server, or PGlite in memory)
 * with these endpoints, each posting to `${receiver}/hooks/<name>` with the test secret.
 */
export async function startRig(
  ctx: BenchContext,
  kind: DatabaseKind,
  endpoints: RigEndpoint[],
  webhooks: Record<string, unknown> = {},
): Promise<Rig> {
  const db = kind === 'PostgreSQL' ? await ctx.createDatabase() : undefined
  const { gateway, close } = await startBenchGateway({
    ...(db ? { databaseUrl: db.url } : {}),
    service: BENCH_SERVICE,
    value: {
      webhooks: {
        ...webhooks,
        endpoints: endpoints.map(endpointSetting),
      },
    },
  })
  return {
    ...rigReads(gateway.url, kind, endpoints, gateway.database.db),
    async close() {
      await close()
      await db?.drop()
    },
  }
}

/**
 * Starts `livegate serve --workers <workers>` as a process of its own on a fresh database of the
 * bench's server, with these endpoints: with any, its webhook worker delivers for the HTTP workers.
 */
export async function startServeRig(
  ctx: BenchContext,
  workers: number,
  endpoints: RigEndpoint[],
  webhooks: Record<string, unknown> = {},
): Promise<Rig> {
  const db = await ctx.createDatabase()
  const serve = await startServe(db.url, BENCH_SERVICE, workers, {
    webhooks: { ...webhooks, endpoints: endpoints.map(endpointSetting) },
  })
  // The bench's own look at the outbox, beside the serve process's connections.
  const reader = await openDatabase({ url: db.url, dataDir: '', maxConnections: 1 })
  return {
    ...rigReads(serve.url, 'PostgreSQL', endpoints, reader.db),
    async close() {
      await serve.stop()
      await reader.close()
      await db.drop()
    },
  }
}

/** An endpoint as the config file says it: `${receiver}/hooks/<name>`, the test secret, every service. */
function endpointSetting(endpoint: RigEndpoint): Record<string, unknown> {
  return {
    name: endpoint.name,
    url: `${endpoint.receiver.url}/hooks/${endpoint.name}`,
    secret: WEBHOOK_SECRET,
    serviceCodes: '*',
    events: endpoint.events ?? ['*'],
  }
}

/** What a rig reads of a gateway: its outbox through the database, its attempts through `/metrics`. */
function rigReads(url: string, kind: DatabaseKind, endpoints: RigEndpoint[], drizzle: Db): Omit<Rig, 'close'> {
  const names = endpoints.map((endpoint) => endpoint.name)
  return {
    url,
    kind,
    endpoints: names,
    async waiting() {
      const states = [...(await endpointStates(drizzle, names)).values()]
      return { pending: states.reduce((n, s) => n + s.pending, 0), dead: states.reduce((n, s) => n + s.deadLetters, 0) }
    },
    async attempts(outcome) {
      const samples = await scrapeMetrics(url)
      return names.reduce(
        (n, endpoint) => n + metricValue(samples, 'livegate_webhook_attempts_total', { endpoint, outcome }),
        0,
      )
    },
    async bodies(endpoint, limit) {
      const rows = await deliveryPage(drizzle, endpoint, { limit })
      return rows.map((row) => ({ eventId: row.eventId, body: row.body }))
    },
  }
}

/** Waits until `ready()` holds, polling every `everyMs`; the time it took (ms). Throws after `timeoutMs`. */
export async function waitFor(
  what: string,
  ready: () => Promise<boolean>,
  timeoutMs: number,
  everyMs = 20,
): Promise<number> {
  const started = Date.now()
  for (;;) {
    if (await ready()) return Date.now() - started
    if (Date.now() - started > timeoutMs)
      throw new Error(`delivery bench: ${what} did not happen within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}

/**
 * Waits until nothing is in line for the rig's endpoints and the receivers have taken in nothing
 * new for three looks in a row: the enqueuer and the workers are done with what came.
 */
export async function settleDeliveries(rig: Rig, receivers: BenchReceiver[], timeoutMs = 120_000): Promise<number> {
  let quiet = 0
  let seen = -1
  return waitFor(
    'delivering everything',
    async () => {
      const { pending } = await rig.waiting()
      const stats = await Promise.all(receivers.map((receiver) => receiver.stats()))
      const received = stats.flatMap((byPath) => Object.values(byPath)).reduce((n, s) => n + s.received, 0)
      quiet = pending === 0 && received === seen ? quiet + 1 : 0
      seen = received
      return quiet >= 3
    },
    timeoutMs,
    100,
  )
}
