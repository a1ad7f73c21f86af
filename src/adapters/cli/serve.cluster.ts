import cluster, { type Worker } from 'node:cluster'
import { hostname } from 'node:os'
import { type DestinationStream, type Logger, type LoggerOptions, pino } from 'pino'
import { AggregatorRegistry, Counter, Gauge, Registry } from 'prom-client'
import type { Config } from '../../config/index.js'
import {
  type AskedPart,
  type ClusterMessage,
  isClusterMessage,
  type WholeReadiness,
  WORKER_ROLE_VARIABLE,
  type WorkerMetrics,
  type WorkerRole,
} from '../ops/cluster.link.js'
import { backoffMs } from '../../work/wake.scheduler.js'
import { loggerOptions } from '../ops/log.redaction.js'
import type { ReadinessReport } from '../ops/readiness.probe.js'
import type { CliIo } from './command.model.js'

/** How the primary announces the gateway once every worker listens (the single gateway's lines). */
export type Announce = (log: Logger, url: string) => void

// A worker that exits sooner than this after its start is in a crash loop: its restarts back off.
const QUICK_EXIT_MS = 30_000
const BACKOFF_BASE_MS = 500
const BACKOFF_MAX_MS = 30_000
// A worker that does not answer a gather within this (it is stopping, or stuck) is left out of it.
const GATHER_LIMIT_MS = 5_000

type Part = Extract<ClusterMessage, { livegate: 'part' }>

/**
 * `serve --workers N`: this process (the primary) runs no gateway itself. It forks N workers
 * (node:cluster), each a whole gateway; they share the one port, which the primary holds and
 * hands connections to in turn. The first worker starts alone (it applies migrations), and a
 * failure of its start ends `serve`; the rest start after it, and from then on a worker that exits,
 * or fails to start, is replaced, after a back-off when it keeps exiting soon after its start, and counted. SIGTERM or SIGINT asks every worker to stop as a
 * single gateway stops, and the primary exits once they all have. `/metrics` and `/readyz`, asked
 * of any worker, are answered by the primary gathering every listening worker's own.
 *
 * With webhook endpoints configured, one more worker listens on no port and delivers for all of
 * them (webhooks.assembly.ts): the HTTP workers put nothing in line and post nothing, so delivery
 * never shares their event loop with the callback route. Its metrics are gathered with theirs.
 */
export async function serveCluster(config: Config, workers: number, io: CliIo, announce: Announce): Promise<number> {
  const options = loggerOptions(config, undefined, io.tty ?? false) as LoggerOptions & { stream?: DestinationStream }
  const settings = { ...options, base: { pid: process.pid, hostname: hostname(), worker: 0 } }
  const log = options.stream ? pino(settings, options.stream) : pino(settings)
  const registry = new Registry()
  const listening = new Set<Worker>()
  // The webhook worker, once it delivers; none without endpoints.
  let deliverer: Worker | undefined
  const withWebhooks = config.webhooks.endpoints.length > 0 && config.webhooks.ownWorker
  const restarts = new Counter({
    name: 'livegate_worker_restarts_total',
    help: 'Workers replaced after exiting, by reason (crashed, or stopped on their own).',
    labelNames: ['reason'],
    registers: [registry],
  })
  new Gauge({
    name: 'livegate_workers',
    help: 'Workers serving the port.',
    registers: [registry],
    collect() {
      this.set(listening.size)
    },
  })
  let stopping = false
  let url = ''
  const quickExits = new Map<number, number>()
  const timers = new Set<NodeJS.Timeout>()
  const gathers = new Map<number, (part: Part | undefined) => void>()
  let nextGather = 0

  const gatherFrom = (worker: Worker, what: AskedPart) =>
    new Promise<Part | undefined>((resolve) => {
      const id = nextGather++
      const timer = setTimeout(() => finish(undefined), GATHER_LIMIT_MS)
      const finish = (part: Part | undefined) => {
        clearTimeout(timer)
        gathers.delete(id)
        resolve(part)
      }
      gathers.set(id, finish)
      if (!worker.isConnected()) return finish(undefined)
      worker.send({ livegate: 'gather', id, what } satisfies ClusterMessage)
    })

  const answer = async (worker: Worker, id: number, what: AskedPart) => {
    // Readiness is the port's: the webhook worker takes no request, so only its metrics are asked.
    const targets = what === 'metrics' && deliverer ? [...listening, deliverer] : [...listening]
    const parts = await Promise.all(targets.map((target) => gatherFrom(target, what)))
    let reply: ClusterMessage
    if (what === 'metrics') {
      const each = parts.flatMap((part) => (part?.metrics ? [part.metrics] : [])) as WorkerMetrics[]
      // prom-client's own aggregation: counters and histograms summed, each metric's `aggregator` otherwise.
      const whole = AggregatorRegistry.aggregate(each)
      reply = {
        livegate: 'whole',
        id,
        body: (await whole.metrics()) + (await registry.metrics()),
        contentType: registry.contentType,
      }
    } else {
      reply = { livegate: 'whole', id, report: wholeReadiness(targets, parts) }
    }
    if (worker.isConnected()) worker.send(reply)
  }

  cluster.on('message', (worker, message: unknown) => {
    if (!isClusterMessage(message)) return
    if (message.livegate === 'part') gathers.get(message.id)?.(message)
    if (message.livegate === 'ask') {
      answer(worker, message.id, message.what).catch((error: unknown) => {
        log.error({ err: error }, "could not gather the workers' answers")
        if (worker.isConnected())
          worker.send({
            livegate: 'whole',
            id: message.id,
            error: 'the workers could not be asked',
          } satisfies ClusterMessage)
      })
    }
  })

  /** Forks the worker of one slot; resolves true once it listens (or delivers), false if it exits first. */
  const start = (slot: number, role: WorkerRole = 'http'): Promise<boolean> =>
    new Promise((resolve) => {
      const startedAt = Date.now()
      const worker = cluster.fork(withWebhooks ? { [WORKER_ROLE_VARIABLE]: role } : {})
      if (role === 'webhooks')
        worker.on('message', (message: unknown) => {
          if (!isClusterMessage(message) || message.livegate !== 'delivering') return
          deliverer = worker
          log.debug({ workerId: worker.id, workerPid: worker.process.pid }, 'webhook worker delivering')
          resolve(true)
        })
      worker.once('listening', (address) => {
        listening.add(worker)
        url ||= `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${address.port}`
        log.debug({ slot, workerId: worker.id, workerPid: worker.process.pid }, 'worker listening')
        resolve(true)
      })
      worker.once('exit', (code, signal) => {
        const wasServing = listening.delete(worker) || deliverer === worker
        if (deliverer === worker) deliverer = undefined
        resolve(false)
        if (stopping || !url) return
        const reason = code === 0 && !signal ? 'stopped' : 'crashed'
        restarts.inc({ reason })
        const quick = Date.now() - startedAt < QUICK_EXIT_MS || !wasServing ? (quickExits.get(slot) ?? 0) + 1 : 0
        quickExits.set(slot, quick)
        const delayMs = quick === 0 ? 0 : backoffMs(quick - 1, BACKOFF_BASE_MS, BACKOFF_MAX_MS)
        log[reason === 'crashed' ? 'error' : 'warn'](
          { workerId: worker.id, workerPid: worker.process.pid, code, signal, delayMs },
          `worker ${reason}; a new one starts${delayMs ? ` in ${delayMs} ms` : ''}`,
        )
        const timer = setTimeout(() => {
          timers.delete(timer)
          if (!stopping) void start(slot, role)
        }, delayMs)
        timers.add(timer)
      })
    })

  // SIGTERM, as to a single gateway: a worker stops as one does. One that was not listening yet
  // (a replacement still starting) has answered nothing, so how it ends does not count.
  const stopAll = async (): Promise<boolean> => {
    stopping = true
    for (const timer of timers) clearTimeout(timer)
    const exits = Object.values(cluster.workers ?? {}).flatMap((worker) => {
      if (!worker) return []
      const counts = listening.has(worker) || worker === deliverer
      const exited = new Promise<boolean>((resolve) => worker.once('exit', (code) => resolve(!counts || code === 0)))
      worker.process.kill('SIGTERM')
      return [exited]
    })
    return (await Promise.all(exits)).every(Boolean)
  }

  // The first worker alone: it applies the migrations, and a start that fails (a database that
  // cannot be reached, a busy port) fails once, with the one line the worker printed.
  if (!(await start(1))) return 1
  // From then on the gateway serves: a worker whose start fails (the database away a moment) is
  // replaced with back-off as any worker that exits is, never taking the serving one down with it.
  await Promise.all([
    ...Array.from({ length: workers - 1 }, (_, index) => start(index + 2)),
    ...(withWebhooks ? [start(0, 'webhooks')] : []),
  ])
  announce(log, url)
  log.info(
    { workers, webhookWorker: withWebhooks },
    `${workers} workers serve ${url} (node:cluster)${withWebhooks ? '; one more delivers the webhooks' : ''}`,
  )
  const signal = await io.stopSignal
  log.info({ signal }, 'stopping every worker')
  const clean = await stopAll()
  log.info('every worker stopped')
  return clean ? 0 : 1
}

const REPLICA_STATES = ['serving', 'lagging', 'down']

/** Each replica as the worker that sees it worst does: every worker probes it on its own and routes by its own view. */
function wholeReplicas(reports: ReadinessReport[]): Pick<ReadinessReport, 'replicas'> {
  const byName = new Map<string, { name: string; state: string; lagMs: number }>()
  for (const replica of reports.flatMap((report) => report.replicas ?? [])) {
    const seen = byName.get(replica.name)
    const worse = !seen || REPLICA_STATES.indexOf(replica.state) > REPLICA_STATES.indexOf(seen.state)
    byName.set(replica.name, worse ? replica : { ...seen, lagMs: Math.max(seen.lagMs, replica.lagMs) })
  }
  return byName.size > 0 ? { replicas: [...byName.values()] } : {}
}

/** `/readyz` of the whole: ready when every listening worker is, with each worker's answer. */
function wholeReadiness(targets: Worker[], parts: Array<Part | undefined>): WholeReadiness {
  const reports = parts.flatMap((part) => (part?.report ? [part.report] : [])) as ReadinessReport[]
  const ready = reports.length > 0 && reports.length === targets.length && reports.every((report) => report.ready)
  const failing = reports.find((report) => !report.database.ok)
  const depths = reports.flatMap((report) => (report.spool ? [report.spool.depth] : []))
  return {
    ready,
    database:
      failing?.database ??
      (reports.length > 0
        ? { ok: true, latencyMs: Math.max(...reports.map((report) => report.database.latencyMs)) }
        : { ok: false, latencyMs: 0, error: 'UNAVAILABLE' }),
    spool: depths.length > 0 ? { depth: depths.reduce((sum, depth) => sum + depth, 0) } : null,
    // Every worker's hub must hear the channel: one deaf hub holds deaf subscribers.
    realtime: reports.some((report) => report.realtime)
      ? { listening: reports.every((report) => report.realtime?.listening ?? true) }
      : null,
    // The task_list health is the stored, shared state: every worker reads the same.
    upstream: reports[0]?.upstream ?? [],
    ...wholeReplicas(reports),
    workers: targets.map((worker, index) => ({
      worker: worker.id,
      pid: worker.process.pid ?? 0,
      ready: parts[index]?.report?.ready ?? false,
      listening: parts[index]?.report?.realtime?.listening ?? null,
    })),
  }
}
