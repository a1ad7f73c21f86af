import cluster from 'node:cluster'
import type { MetricObjectWithValues, MetricValue } from 'prom-client'
import type { ReadinessReport } from './readiness.probe.js'

/**
 * The messages between `serve --workers N`'s primary and its workers (node:cluster's IPC).
 * A worker that is asked for `/metrics` or `/readyz` asks the primary, which gathers every
 * worker's own answer (`gather`), combines them, and answers the worker that asked (`whole`).
 */
export type ClusterMessage =
  | { livegate: 'ask'; id: number; what: AskedPart }
  | { livegate: 'whole'; id: number; body?: string; contentType?: string; report?: WholeReadiness; error?: string }
  | { livegate: 'gather'; id: number; what: AskedPart }
  | { livegate: 'part'; id: number; metrics?: WorkerMetrics; report?: ReadinessReport; error?: string }
  // The webhook worker has started: it listens on no port, so node:cluster's 'listening' never says so.
  | { livegate: 'delivering' }

/**
 * What a worker of `serve --workers N` is, in its environment: an HTTP worker behind the port
 * (`http`), or the one webhook worker that delivers for all of them (`webhooks`).
 */
export const WORKER_ROLE_VARIABLE = 'LIVEGATE_WORKER_ROLE'
export type WorkerRole = 'http' | 'webhooks'

/** What the primary gathers from each worker. */
export type AskedPart = 'metrics' | 'readiness'

/** One worker's metrics, as prom-client's `getMetricsAsJSON` gives them (AggregatorRegistry's input). */
export type WorkerMetrics = Array<MetricObjectWithValues<MetricValue<string>>>

/** `/readyz` of a whole cluster: every listening worker's probe, combined. */
export interface WholeReadiness extends ReadinessReport {
  workers: Array<{ worker: number; pid: number; ready: boolean; listening: boolean | null }>
}

/** What a worker's own parts answer when the primary gathers. */
export interface WorkerParts {
  metrics(): Promise<WorkerMetrics>
  readiness(): Promise<ReadinessReport>
}

/** A worker's way to the whole cluster's answers. */
export interface ClusterLink {
  ask(what: 'metrics'): Promise<{ body: string; contentType: string }>
  ask(what: 'readiness'): Promise<WholeReadiness>
}

export const isClusterMessage = (message: unknown): message is ClusterMessage =>
  typeof message === 'object' && message !== null && typeof (message as { livegate?: unknown }).livegate === 'string'

// A primary that does not answer (it is stopping) must not hold a probe or a scrape forever.
const ASK_LIMIT_MS = 10_000

/**
 * In a worker of `serve --workers N`: answers the primary's gathers from this worker's own parts,
 * and returns the link `/metrics` and `/readyz` ask the whole through. Outside a cluster worker
 * (a single gateway, the tests' gateways), undefined: each gateway answers for itself.
 */
export function joinCluster(parts: WorkerParts): ClusterLink | undefined {
  if (!cluster.isWorker || !process.send) return undefined
  const send = process.send.bind(process)
  let nextId = 0
  const waiting = new Map<number, (message: Extract<ClusterMessage, { livegate: 'whole' }>) => void>()
  const onMessage = (message: unknown) => {
    if (!isClusterMessage(message)) return
    if (message.livegate === 'whole') waiting.get(message.id)?.(message)
    if (message.livegate !== 'gather') return
    const answer =
      message.what === 'metrics'
        ? parts.metrics().then((metrics) => ({ metrics }))
        : parts.readiness().then((report) => ({ report }))
    answer.then(
      (part) => send({ livegate: 'part', id: message.id, ...part } satisfies ClusterMessage),
      (error: unknown) =>
        send({
          livegate: 'part',
          id: message.id,
          error: error instanceof Error ? error.message : String(error),
        } satisfies ClusterMessage),
    )
  }
  process.on('message', onMessage)
  const ask = (what: AskedPart) =>
    new Promise<Extract<ClusterMessage, { livegate: 'whole' }>>((resolve, reject) => {
      const id = nextId++
      const timer = setTimeout(() => {
        waiting.delete(id)
        reject(new Error(`the primary did not answer for ${what} within ${ASK_LIMIT_MS / 1000} s`))
      }, ASK_LIMIT_MS)
      waiting.set(id, (message) => {
        clearTimeout(timer)
        waiting.delete(id)
        if (message.error !== undefined) reject(new Error(message.error))
        else resolve(message)
      })
      send({ livegate: 'ask', id, what } satisfies ClusterMessage)
    })
  return {
    ask: (async (what: AskedPart) => {
      const whole = await ask(what)
      return what === 'metrics'
        ? { body: whole.body ?? '', contentType: whole.contentType ?? 'text/plain' }
        : whole.report
    }) as ClusterLink['ask'],
  }
}
