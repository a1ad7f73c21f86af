import type postgres from 'postgres'
import { startTaskListServer, type TaskListServer } from '../../src/simulator/task-list.server.js'
import type { SimulatedTaskList } from '../../src/simulator/task-list.snapshot.js'
import { type BenchGateway, startBenchGateway } from './bench.gateway.js'
import { ratio, type TargetCheck } from './bench.report.js'
import type { LoadRequest } from './load.generate.js'
import type { Work, WorkFigure } from './query.windows.js'
import { HELD_SETTINGS, SEED_SERVICE_CODE, taskListOf } from './query.seed.js'

const SECRET = 'bench-secret'
// Longer than any timeout: the request is cut by livegate's own (upstream.timeoutMs).
const NEVER_MS = 3_600_000
/** What each variant must keep of the no-upstream figure. */
const KEEP = 0.95

/** One livegate whose service code has a task_list upstream, on a database of its own. */
interface Variant {
  name: string
  database: string
  delayMs: number
  upstream?: TaskListServer
  served?: BenchGateway
}

/**
 * The query bench's upstream variants: livegate on a copy of the no-upstream database, its
 * service code polled (at the default interval) from a simulated task_list that answers after
 * 200 ms with the seeded list, so every poll folds it again, and from one that never answers.
 * Queries never ask the task_list, so they must not notice either.
 */
export class UpstreamVariants {
  private constructor(
    private readonly admin: postgres.Sql,
    private readonly variants: readonly Variant[],
  ) {}

  /**
   * Copies the template database for each variant; call while nothing is connected to it.
   * `label` names the no-upstream figure; each variant's figure is named after it.
   */
  static async prepare(admin: postgres.Sql, template: string, label: string): Promise<UpstreamVariants> {
    const variants: Variant[] = [
      { name: `${label}, task_list answering after 200 ms`, database: `${template}_up200`, delayMs: 200 },
      { name: `${label}, task_list never answering`, database: `${template}_uphang`, delayMs: NEVER_MS },
    ]
    for (const variant of variants) await admin.unsafe(`create database "${variant.database}" template "${template}"`)
    return new UpstreamVariants(admin, variants)
  }

  /** Starts each variant's task_list server, listing `tasks` seeded tasks, and a livegate on its copy. */
  async start(serverUrl: string, tasks: number): Promise<void> {
    for (const variant of this.variants) {
      const upstream = await startTaskListServer({
        services: [{ serviceCode: SEED_SERVICE_CODE, secret: SECRET }],
        source: () => taskListOf(tasks) as unknown as SimulatedTaskList,
      })
      upstream.behave({ delayMs: variant.delayMs })
      variant.upstream = upstream
      const url = Object.assign(new URL(serverUrl), { pathname: `/${variant.database}` }).toString()
      variant.served = await startBenchGateway({
        databaseUrl: url,
        service: { serviceCode: SEED_SERVICE_CODE, secret: SECRET },
        value: {
          ...HELD_SETTINGS,
          services: [{ serviceCode: SEED_SERVICE_CODE, secrets: [SECRET], baseUrl: upstream.url }],
        },
      })
    }
  }

  /** The gateways' URLs, in variant order. */
  get urls(): string[] {
    return this.variants.map((variant) => variant.served?.gateway.url as string)
  }

  /** One work per variant, each answering `pool`, to measure in turns with the others. */
  works(pool: LoadRequest[]): Work[] {
    return this.variants.map((variant, i) => ({ name: variant.name, url: this.urls[i] as string, pool }))
  }

  /** How many task_list requests each upstream has had: the pollers really polled. */
  get polls(): number[] {
    return this.variants.map((variant) => variant.upstream?.requests ?? 0)
  }

  /** Each variant's figure (by name) against the no-upstream figure of the same run. */
  targets(noUpstream: WorkFigure, figures: readonly WorkFigure[]): TargetCheck[] {
    return this.variants.map((variant) => {
      const figure = figures.find((candidate) => candidate.name === variant.name)
      const rps = figure?.result.rps ?? Number.NaN
      return {
        name: `${variant.name}, vs no upstream (req/s)`,
        target: `≥ ${KEEP.toFixed(2)}×`,
        measured: ratio(rps, noUpstream.result.rps),
        met: rps >= KEEP * noUpstream.result.rps,
      }
    })
  }

  async close(): Promise<void> {
    for (const variant of this.variants) {
      await variant.served?.close()
      await variant.upstream?.close()
      await this.admin.unsafe(`drop database if exists "${variant.database}" with (force)`)
    }
  }
}
