import { readFileSync } from 'node:fs'
import postgres from 'postgres'
import { MEMORY_DATA_DIR } from '../../src/config/index.js'
import { openDatabase } from '../../src/storage/database.client.js'
import { startBuildGateway, THIS_BUILD } from './build.gateway.js'
import { runLoad, type LoadRequest } from './load.generate.js'
import { mainThreadCpuMs } from './process.cpu.js'
import { SMALL_QUERY, TASK_PAGE_QUERY } from './query.bench.js'
import { startCeiling } from './query.ceiling.js'
import { foldAndSettle, growTasks, SEED_SERVICE_CODE, seedTasks } from './query.seed.js'

/**
 * `tsx test/bench/statements.measure.ts`: the small query's and the task page's cost per request
 * in Node (this process's main thread) and in PostgreSQL (the backends of the measured database,
 * read from /proc), and their rate beside the ceiling's, in about a minute. For A/B runs of the
 * statement layer: STATEMENTS_BUILD=/path/to/another/worktree runs that build's gateway instead
 * from its compiled dist/ (the database, the load and the ceiling stay this one's; run `npm run build` first), so an
 * outer loop can alternate two
 * builds on one seeded database. STATEMENTS_DATABASE_URL must name a server database (seeded on
 * first use with the bench's data at STATEMENTS_CALLBACKS callbacks). Prints one JSON line.
 */
const URL_ = process.env.STATEMENTS_DATABASE_URL
const BUILD = process.env.STATEMENTS_BUILD ?? THIS_BUILD
const CALLBACKS = Number(process.env.STATEMENTS_CALLBACKS ?? 10_000)
const WINDOW_MS = Number(process.env.STATEMENTS_WINDOW_MS ?? 5000)
const CONNECTIONS = 16
const TASKS = 1000

function request(operationName: string, query: string, variables: Record<string, unknown>): LoadRequest {
  const bytes = Buffer.from(JSON.stringify({ operationName, query, variables }))
  return {
    path: '/graphql',
    headers: { 'content-type': 'application/json', 'content-length': String(bytes.length) },
    body: bytes,
  }
}

function cpuMs(pid: number): number {
  let stat: string
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return 0
  }
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

async function main(): Promise<void> {
  if (!URL_) throw new Error('STATEMENTS_DATABASE_URL names the database to measure on')
  const probe = postgres(URL_, { max: 1, onnotice: () => {} })
  const [have] = await probe<{ n: string | null }[]>`select to_regclass('tasks')::text as n`
  if (!have?.n || Number((await probe<{ n: string }[]>`select count(*) as n from tasks`)[0]?.n) === 0) {
    const database = await openDatabase({ url: URL_, dataDir: MEMORY_DATA_DIR })
    await database.migrate()
    const real = await seedTasks(database, TASKS)
    await growTasks(database.db, real, TASKS, CALLBACKS, 1)
    await foldAndSettle(database)
    await database.close()
  }
  // Per backend: one that ended inside a window loses its share rather than turning the sum negative.
  const backendsCpu = async () => {
    const rows = await probe<
      { pid: number }[]
    >`select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`
    return new Map(rows.map((row) => [row.pid, cpuMs(row.pid)]))
  }
  const spent = (before: Map<number, number>, after: Map<number, number>) =>
    [...after].reduce((sum, [pid, ms]) => sum + Math.max(0, ms - (before.get(pid) ?? 0)), 0)
  const started = await startBuildGateway(BUILD, {
    databaseUrl: URL_,
    service: { serviceCode: SEED_SERVICE_CODE, secret: 'bench-secret' },
    value: { retention: { intervalMs: 0 } },
  })
  const ceiling = await startCeiling(URL_)
  const out: Record<string, unknown> = { build: BUILD, node: process.version }
  try {
    const first = request('TaskPage', TASK_PAGE_QUERY, { first: 50 })
    const page1 = (await (
      await fetch(new URL('/graphql', started.gateway.url), {
        method: 'POST',
        headers: first.headers,
        body: first.body,
      })
    ).json()) as any
    const pools = {
      small: [request('TaskList', SMALL_QUERY, { first: 20 })],
      page: [
        first,
        request('TaskPage', TASK_PAGE_QUERY, { first: 50, after: page1.data.tasks.pageInfo.endCursor }),
        request('TaskPage', TASK_PAGE_QUERY, { first: 50, filter: { status: ['LIVE', 'WAITING_RECONNECT'] } }),
      ],
    }
    for (const [name, pool] of Object.entries(pools)) {
      for (const [who, url] of [
        ['livegate', started.gateway.url],
        ['ceiling', ceiling.url],
      ] as const) {
        await runLoad({ url, connections: CONNECTIONS, warmupMs: 0, durationMs: 1500, pool, repeat: true })
        const [node, pg] = [mainThreadCpuMs(), await backendsCpu()]
        const result = await runLoad({
          url,
          connections: CONNECTIONS,
          warmupMs: 0,
          durationMs: WINDOW_MS,
          pool,
          repeat: true,
        })
        const n = result.okTotal + result.failedTotal
        const pgMs = spent(pg, await backendsCpu()) / n
        out[`${name}.${who}.rps`] = Math.round(result.rps)
        out[`${name}.${who}.pgMs`] = Number(pgMs.toFixed(3))
        if (who === 'livegate') out[`${name}.${who}.nodeMs`] = Number(((mainThreadCpuMs() - node) / n).toFixed(3))
        if (result.failedTotal + result.errorsTotal > 0)
          out[`${name}.${who}.failed`] = result.failedTotal + result.errorsTotal
      }
      out[`${name}.ratio`] = Number(
        ((out[`${name}.livegate.rps`] as number) / (out[`${name}.ceiling.rps`] as number)).toFixed(3),
      )
    }
    console.log(JSON.stringify(out))
  } finally {
    await ceiling.close()
    await started.close()
    await probe.end()
  }
}

await main()
