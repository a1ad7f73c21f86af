import { Agent, request } from 'node:http'
import { performance } from 'node:perf_hooks'
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'

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
  /** Go round the pool again when it runs out (queries, which may repeat), instead of stopping. */
  repeat?: boolean
  /** The HTTP method; POST unless told. */
  method?: string
  /**
   * Paced instead of as fast as answers come: requests are sent at this rate (across all connections), none before its
   * time.
   */
  ratePerSecond?: number
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
  /** How many requests of the pool were sent: a later run goes on from there. */
  sent: number
  /** Every latency measured inside the window, in ms, sorted: runs can be pooled. */
  latencies: Float64Array
}

/**
 * A closed-loop load generator in a process of its own, as real clients are (a thread of the
 * measuring process would share its cores' scheduling and its garbage collector's pauses with the
 * servers under test): `connections` keep-alive sockets, each sending its next request as soon
 * as the previous answer is read (autocannon's model, without the dependency).
 */
export function runLoad(options: LoadOptions): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    // This TypeScript file is the child's entry, run through tsx as the bench itself is.
    const child = fork(fileURLToPath(import.meta.url), [LOAD_CHILD], {
      execArgv: ['--import', 'tsx'],
      serialization: 'advanced',
      stdio: 'inherit',
    })
    child.once('message', (result: LoadResult) => resolve(result))
    child.once('error', reject)
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`load process exited with ${code}`))
    })
    child.send(options)
  })
}

const LOAD_CHILD = '--livegate-bench-load'

if (process.argv.includes(LOAD_CHILD) && process.send) {
  process.once('message', (options: LoadOptions) => {
    const pool = options.pool.map((item) => ({ ...item, body: Buffer.from(item.body) }))
    void generate({ ...options, pool }).then((result) => process.send?.(result, () => process.disconnect()))
  })
}

async function generate(options: LoadOptions): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: options.connections, maxFreeSockets: options.connections })
  const target = new URL(options.url)
  const start = performance.now()
  const measureFrom = start + options.warmupMs
  const end = measureFrom + options.durationMs
  // Preallocated so recording a latency never allocates during the run.
  const latencies = new Float64Array(options.repeat ? 2_000_000 : Math.max(1, options.pool.length))
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
          method: options.method ?? 'POST',
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

  // Paced: request n is due n / rate seconds after the start; a connection waits for its due time.
  let issued = 0
  const pace = async () => {
    if (!options.ratePerSecond) return
    const due = start + (issued++ * 1000) / options.ratePerSecond
    const wait = due - performance.now()
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
  }

  const worker = async () => {
    for (;;) {
      await pace()
      const sentAt = performance.now()
      if (next >= options.pool.length && options.repeat) next = 0
      if (sentAt >= end || next >= options.pool.length) return
      const item = options.pool[next++] as LoadRequest
      const status = await sendOne(item)
      const doneAt = performance.now()
      if (status >= 200 && status < 300) okTotal++
      else if (status === 0) errorsTotal++
      else failedTotal++
      // Answers read inside the window count, wherever they were sent: the rate is then what the
      // server sustained, and slow answers straddling the warm-up edge are not left out of the tail.
      if (doneAt >= measureFrom && doneAt <= end && measured < latencies.length) latencies[measured++] = doneAt - sentAt
    }
  }

  await Promise.all(Array.from({ length: options.connections }, worker))
  agent.destroy()
  const sorted = latencies.slice(0, measured).sort()
  const quantile = (q: number) =>
    measured === 0 ? Number.NaN : (sorted[Math.min(measured - 1, Math.floor(q * measured))] as number)
  return {
    measured,
    rps: measured / (options.durationMs / 1000),
    p50Ms: quantile(0.5),
    p99Ms: quantile(0.99),
    meanMs: measured === 0 ? Number.NaN : sorted.reduce((a, b) => a + b, 0) / measured,
    okTotal,
    failedTotal,
    errorsTotal,
    exhausted: !options.repeat && next >= options.pool.length,
    sent: next,
    latencies: sorted,
  }
}
