import type postgres from 'postgres'
import { startTaskListServer, type TaskListServer } from '../../src/simulator/task-list.server.js'
import type { SimulatedTaskList } from '../../src/simulator/task-list.snapshot.js'
import { type BenchGateway, startBenchGateway } from './bench.gateway.js'
import type { TargetCheck } from './bench.report.js'
import { ratio } from './bench.report.js'
import type { LoadResult } from './load.generate.js'
import { SEED_SERVICE_CODE, taskListOf } from './query.seed.js'

const SECRET = 'bench-secret'
// Longer than any timeout: the request is cut by livegate's own (upstream.timeoutMs).
const NEVER_MS = 3_600_000

/** One livegate whose service code has a task_list upstream, on a database of its own. */
interface Variant {
  name: string
  database: string
  upstream?: TaskListServer
  served?: BenchGateway
  runs: LoadResult[]
}

/**
 * The query bench's upstream variants: livegate on a copy of the no-upstream database, its
 * service code polled from a simulated task_list that answers after 200 ms (with the seeded
 * list, so every poll folds it again), and from one that never answers. Queries must not notice.
 */
export class UpstreamVariants {
  private constructor(
    private readonly admin: postgres.Sql,
    readonly variants: [Variant, Variant],
  ) {}

  /** Copies the template database for each variant; call before anything connects to it. */
  static async prepare(admin: postgres.Sql, template: string): Promise<UpstreamVariants> {
    const variants: [Variant, Variant] = [
      { name: 'livegate, 10k, task_list answering after 200 ms', database: `${template}_up200`, runs: [] },
      { name: 'livegate, 10k, task_list never answering', database: `${template}_uphang`, runs: [] },
    ]
    for (const variant of variants) await admin.unsafe(`create database "${variant.database}" template "${template}"`)
    return new UpstreamVariants(admin, variants)
  }

  /** Starts the two task_list servers and a livegate on each copy, `tasks` seeded tasks listed. */
  async start(serverUrl: string, tasks: number): Promise<void> {
    const delays = [200, NEVER_MS]
    for (const [index, variant] of this.variants.entries()) {
      const upstream = await startTaskListServer({ services: [{ serviceCode: SEED_SERVICE_CODE, secret: SECRET }], source: () => taskListOf(tasks) as unknown as SimulatedTaskList })
      upstream.behave({ delayMs: delays[index] as number })
      variant.upstream = upstream
      const url = Object.assign(new URL(serverUrl), { pathname: `/${variant.database}` }).toString()
      variant.served = await startBenchGateway({
        databaseUrl: url,
        service: { serviceCode: SEED_SERVICE_CODE, secret: SECRET },
        value: { retention: { intervalMs: 0 }, services: [{ serviceCode: SEED_SERVICE_CODE, secrets: [SECRET], baseUrl: upstream.url }] },
      })
    }
  }

  /** The gateways' URLs, in variant order. */
  get urls(): string[] {
    return this.variants.map((variant) => variant.served?.gateway.url as string)
  }

  /** Table rows and targets against the no-upstream figure of the same run. */
  report(noUpstream: LoadResult, pooled: (results: LoadResult[]) => LoadResult): { figures: Array<{ name: string; result: LoadResult }>; targets: TargetCheck[] } {
    const figures = this.variants.map((variant) => ({ name: variant.name, result: pooled(variant.runs) }))
    const targets = figures.map((figure) => ({
      name: `${figure.name} vs no upstream (req/s)`,
      target: '≥ 0.95×',
      measured: ratio(figure.result.rps, noUpstream.rps),
      met: figure.result.rps >= 0.95 * noUpstream.rps,
    }))
    return { figures, targets }
  }

  async close(): Promise<void> {
    for (const variant of this.variants) {
      await variant.served?.close()
      await variant.upstream?.close()
      await this.admin.unsafe(`drop database if exists "${variant.database}" with (force)`)
    }
  }
}
