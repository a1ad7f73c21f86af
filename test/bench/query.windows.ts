import { mainThreadCpuMs, postgresCpuMs } from './process.cpu.js'
import { quantile } from './bench.report.js'
import { type LoadRequest, type LoadResult, runLoad } from './load.generate.js'

/** One server answering one pool of requests: a line of the query table. */
export interface Work {
  name: string
  url: string
  pool: LoadRequest[]
  /** The CPU time of the server's processes, when it is not this process's main thread (a `serve` process tree). */
  cpuMs?: () => number
}

/** What a work measured over all its windows, with where its CPU went. */
export interface WorkFigure {
  name: string
  result: LoadResult
  /** CPU time of the server's Node code per answer, in ms: this process's main thread, or a `serve` process tree. */
  nodeCpuMs: number
  /** CPU time of the PostgreSQL server, all its processes, per answer, in ms. */
  postgresCpuMs: number
}

/** How {@link measureInTurns} loads each work. */
export interface TurnOptions {
  rounds: number
  connections: number
  warmupMs: number
  /** Each work's measured time over all rounds together. */
  durationMs: number
  /** The port of the PostgreSQL server on this machine whose CPU is counted. */
  postgresPort: string
}

/**
 * Measures every work in turn, round after round, so a neighbour's burst on the shared machine
 * lands on every server alike; each window's CPU (Node and PostgreSQL) is counted over the whole
 * window, warm-up included, and divided by every answer of it.
 */
export async function measureInTurns(works: Work[], options: TurnOptions): Promise<WorkFigure[]> {
  const runs = works.map(() => [] as LoadResult[])
  const cpu = works.map(() => ({ node: 0, postgres: 0 }))
  for (let round = 0; round < options.rounds; round++) {
    for (const [i, work] of works.entries()) {
      const nodeCpuMs = work.cpuMs ?? mainThreadCpuMs
      const node = nodeCpuMs()
      const pg = postgresCpuMs(options.postgresPort)
      const result = await runLoad({
        url: work.url,
        connections: options.connections,
        warmupMs: options.warmupMs,
        durationMs: options.durationMs / options.rounds,
        pool: work.pool,
        repeat: true,
      })
      ;(runs[i] as LoadResult[]).push(result)
      const spent = cpu[i] as { node: number; postgres: number }
      spent.node += nodeCpuMs() - node
      spent.postgres += postgresCpuMs(options.postgresPort) - pg
    }
  }
  return works.map((work, i) => {
    const result = pooled(runs[i] as LoadResult[])
    const answered = result.okTotal + result.failedTotal
    const spent = cpu[i] as { node: number; postgres: number }
    return { name: work.name, result, nodeCpuMs: spent.node / answered, postgresCpuMs: spent.postgres / answered }
  })
}

/** Several windows of one server as one figure: their latencies pooled, counts summed, rates averaged. */
function pooled(results: LoadResult[]): LoadResult {
  const sum = (pick: (r: LoadResult) => number) => results.reduce((n, r) => n + pick(r), 0)
  const latencies = new Float64Array(sum((r) => r.latencies.length))
  let at = 0
  for (const r of results) {
    latencies.set(r.latencies, at)
    at += r.latencies.length
  }
  latencies.sort()
  return {
    measured: sum((r) => r.measured),
    rps: sum((r) => r.rps) / results.length,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    meanMs: latencies.reduce((n, v) => n + v, 0) / latencies.length,
    okTotal: sum((r) => r.okTotal),
    failedTotal: sum((r) => r.failedTotal),
    errorsTotal: sum((r) => r.errorsTotal),
    exhausted: results.some((r) => r.exhausted),
    sent: sum((r) => r.sent),
    latencies,
  }
}
