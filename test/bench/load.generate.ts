import { Agent, request } from 'node:http'
import { performance } from 'node:perf_hooks'

/** One request of the pool, prepared before the run so building it costs the client nothing. */
export interface LoadRequest {
  path: string
  headers: Record<string, string>
  body: Buffer
}

/** What {@link runLoad} needs. */
export interface LoadOptions {
  /** The server's base URL, e.g. `http://127.0.0.1:4000`. */
  url: string
  connections: number
  warmupMs: number
  durationMs: number
  /**
   * Sent in order, each at most once: every callback must be distinct or the server would
   * (rightly) deduplicate it and the row count would no longer match the 2xx count.
   */
  pool: LoadRequest[]
}

/** What one run measured. */
export interface LoadResult {
  /** Answers completed inside the measured window (after the warm-up). */
  measured: number
  rps: number
  p50Ms: number
  p99Ms: number
  meanMs: number
  /** 2xx answers over the whole run, warm-up included: what the table must hold. */
  okTotal: number
  /** Non-2xx answers over the whole run. */
  failedTotal: number
  /** Socket errors over the whole run. */
  errorsTotal: number
  /** The pool ran out before the time did: the figure is then a lower bound. */
  exhausted: boolean
}

/**
 * A closed-loop load generator in this process: `connections` keep-alive sockets, each sending
 * its next request as soon as the previous answer is read (autocannon's model, without the
 * dependency).
 */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: options.connections, maxFreeSockets: options.connections })
  const target = new URL(options.url)
  const start = performance.now()
  const measureFrom = start + options.warmupMs
  const end = measureFrom + options.durationMs
  // Preallocated so recording a latency never allocates during the run.
  const latencies = new Float64Array(Math.max(1, options.pool.length))
  let measured = 0
  let next = 0
  let okTotal = 0
  let failedTotal = 0
  let errorsTotal = 0

  const sendOne = (item: LoadRequest) =>
    new Promise<number>((resolve) => {
      const req = request(
        {
          agent,
          host: target.hostname,
          port: target.port,
          method: 'POST',
          path: item.path,
          headers: item.headers,
        },
        (res) => {
          res.on('data', () => {})
          res.on('end', () => resolve(res.statusCode ?? 0))
          res.on('error', () => resolve(0))
        },
      )
      req.on('error', () => resolve(0))
      req.end(item.body)
    })

  const worker = async () => {
    for (;;) {
      const sentAt = performance.now()
      if (sentAt >= end || next >= options.pool.length) return
      const item = options.pool[next++] as LoadRequest
      const status = await sendOne(item)
      const doneAt = performance.now()
      if (status >= 200 && status < 300) okTotal++
      else if (status === 0) errorsTotal++
      else failedTotal++
      // Answers read inside the window count, wherever they were sent: the rate is then what the
      // server sustained, and slow answers straddling the warm-up edge are not left out of the tail.
      if (doneAt >= measureFrom && doneAt <= end) latencies[measured++] = doneAt - sentAt
    }
  }

  await Promise.all(Array.from({ length: options.connections }, worker))
  agent.destroy()
  const sorted = latencies.subarray(0, measured).sort()
  const quantile = (q: number) => (measured === 0 ? Number.NaN : (sorted[Math.min(measured - 1, Math.floor(q * measured))] as number))
  return {
    measured,
    rps: measured / (options.durationMs / 1000),
    p50Ms: quantile(0.5),
    p99Ms: quantile(0.99),
    meanMs: measured === 0 ? Number.NaN : sorted.reduce((a, b) => a + b, 0) / measured,
    okTotal,
    failedTotal,
    errorsTotal,
    exhausted: next >= options.pool.length,
  }
}
