import { readFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { writeFileSync } from 'node:fs'
import postgres from 'postgres'
import { startBaseline, startPgliteBaseline } from './baseline.server.js'
import { startBuildGateway, THIS_BUILD } from './build.gateway.js'
import { BENCH_SERVICE, signPool } from './ingest.pool.js'
import { settleByMetrics } from './ingest.lag.js'
import { runLoad } from './load.generate.js'
import { mainThreadCpuMs } from './process.cpu.js'

/**
 * `tsx test/bench/ingest.ab.ts`: the ingest bench's load on the bare group-commit baseline and on
 * two builds' gateways (INGEST_A, default /work/wt-base, and INGEST_B, default this worktree,
 * each from its compiled dist/), interleaved in INGEST_ROUNDS rounds, for A/B work on the ingest
 * path in a few minutes. On a server (INGEST_SERVER_URL, a superuser URL: each target gets a
 * database of its own) or with INGEST_PGLITE=1 on PGlite in memory. PostgreSQL's CPU is its
 * backends' for the target's database, read from /proc. INGEST_PROFILE=file.cpuprofile profiles
 * B's windows. Prints one line per round and a JSON summary (medians over rounds).
 */
const SERVER = process.env.INGEST_SERVER_URL ?? 'postgres://postgres@127.0.0.1:55432/postgres'
const PGLITE = process.env.INGEST_PGLITE === '1'
const BUILDS = { A: process.env.INGEST_A ?? '/work/wt-base', B: process.env.INGEST_B ?? THIS_BUILD }
const ROUNDS = Number(process.env.INGEST_ROUNDS ?? 4)
const WARMUP_MS = 500
const WINDOW_MS = Number(process.env.INGEST_WINDOW_MS ?? 2500)
const POOL = 60_000
const CONNECTIONS = 100

interface Target {
  name: string
  url: string
  livegate: boolean
  database?: string
  close(): Promise<void>
}

function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch {
    return 0
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number

async function main(): Promise<void> {
  const admin = postgres(SERVER, { max: 1, onnotice: () => {} })
  const databases: string[] = []
  const createDatabase = async (name: string) => {
    const database = `i28_ingest_ab_${name}_${process.pid}`
    await admin.unsafe(`create database ${database}`)
    databases.push(database)
    const url = new URL(SERVER)
    url.pathname = `/${database}`
    return { url: url.toString(), database }
  }
  const backends = async (database: string | undefined) => {
    if (!database) return new Map<number, number>()
    const rows = await admin<{ pid: number }[]>`select pid from pg_stat_activity where datname = ${database}`
    return new Map(rows.map((row) => [row.pid, cpuMs(row.pid)]))
  }
  const targets: Target[] = []
  try {
    if (PGLITE) {
      const baseline = await startPgliteBaseline()
      targets.push({ name: 'baseline', url: baseline.url, livegate: false, close: () => baseline.close() })
    } else {
      const db = await createDatabase('base')
      const baseline = await startBaseline(db.url)
      targets.push({
        name: 'baseline',
        url: baseline.url,
        livegate: false,
        database: db.database,
        close: () => baseline.close(),
      })
    }
    for (const [name, build] of Object.entries(BUILDS)) {
      const db = PGLITE ? undefined : await createDatabase(name.toLowerCase())
      const started = await startBuildGateway(build, { ...(db ? { databaseUrl: db.url } : {}), service: BENCH_SERVICE })
      targets.push({
        name,
        url: started.gateway.url,
        livegate: true,
        ...(db ? { database: db.database } : {}),
        close: () => started.close(),
      })
    }
    const figures = targets.map(() => ({
      rps: [] as number[],
      p99: [] as number[],
      node: [] as number[],
      pg: [] as number[],
    }))
    const session = process.env.INGEST_PROFILE ? new Session() : undefined
    if (session) {
      session.connect()
      await session.post('Profiler.enable')
      await session.post('Profiler.setSamplingInterval', { interval: 200 })
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, target] of targets.entries()) {
        const pool = signPool(target.url, POOL, `${target.name}-${round}-${process.pid}`)
        const profiled = session && target.name === 'B'
        if (profiled) await session.post('Profiler.start')
        const [node, pg] = [mainThreadCpuMs(), await backends(target.database)]
        const result = await runLoad({
          url: target.url,
          connections: CONNECTIONS,
          warmupMs: WARMUP_MS,
          durationMs: WINDOW_MS,
          pool,
        })
        const pgAfter = await backends(target.database)
        const n = result.okTotal + result.failedTotal
        const figure = figures[i] as (typeof figures)[number]
        figure.node.push(((mainThreadCpuMs() - node) * 1000) / n)
        figure.pg.push(
          ([...pgAfter].reduce((sum, [pid, ms]) => sum + Math.max(0, ms - (pg.get(pid) ?? 0)), 0) * 1000) / n,
        )
        figure.rps.push(result.rps)
        figure.p99.push(result.p99Ms)
        if (profiled) {
          const { profile } = await session.post('Profiler.stop')
          writeFileSync(`${process.env.INGEST_PROFILE}.${round}`, JSON.stringify(profile))
        }
        if (result.failedTotal + result.errorsTotal > 0)
          console.error(`${target.name}: ${result.failedTotal} non-2xx, ${result.errorsTotal} errors`)
        if (target.livegate) await settleByMetrics([target.url])
      }
      const base = figures[0] as (typeof figures)[number]
      console.error(
        `round ${round + 1}: ${targets.map((t, i) => `${t.name} ${figures[i]?.rps.at(-1)?.toFixed(0)}/s p99 ${figures[i]?.p99.at(-1)?.toFixed(1)} ms (${((figures[i]?.rps.at(-1) ?? 0) / (base.rps.at(-1) ?? 1)).toFixed(3)}` + `×)`).join(', ')}`,
      )
    }
    const base = figures[0] as (typeof figures)[number]
    const summary: Record<string, unknown> = { node: process.version, pglite: PGLITE, rounds: ROUNDS, builds: BUILDS }
    for (const [i, target] of targets.entries()) {
      const f = figures[i] as (typeof figures)[number]
      summary[target.name] = {
        rps: Math.round(median(f.rps)),
        ratios: f.rps.map((r, k) => Number((r / (base.rps[k] as number)).toFixed(3))),
        nodeUsRounds: f.node.map(Math.round),
        pgUsRounds: f.pg.map(Math.round),
        p99Ratios: f.p99.map((p, k) => Number((p / (base.p99[k] as number)).toFixed(2))),
        nodeUs: Math.round(median(f.node)),
        pgUs: Math.round(median(f.pg)),
      }
    }
    console.log(JSON.stringify(summary))
  } finally {
    for (const target of targets) await target.close().catch(() => {})
    for (const database of databases)
      await admin.unsafe(`drop database if exists ${database} with (force)`).catch(() => {})
    await admin.end()
  }
}

await main()
