import { sql } from 'drizzle-orm'
import { signCallback } from '../../src/model/callback.sign.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { startBaseline } from './baseline.server.js'
import { startBenchGateway } from './bench.gateway.js'
import { mainThreadCpuMs, postgresCpuMs } from './cpu.probe.js'
import { type BenchContext, type BenchSection, ms, quantile, ratio } from './bench.report.js'
import { type LoadRequest, type LoadResult, runLoad } from './load.generate.js'
import { resultRows } from '../../src/storage/database.client.js'

// Short windows, interleaved: each round measures every server in turn, so a neighbour's load
// on this shared machine falls on all of them alike instead of on whichever ran at that moment.
const CONNECTIONS = 100
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4)
const WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? 500)
const WINDOW_MS = Number(process.env.BENCH_WINDOW_MS ?? 2500)
const SECRET = 'bench-secret'
const SERVICE_CODE = 'TESTING'
// Per round and server, above what a window can take at the issue's ~20k/s ceiling; a pool that
// runs dry is flagged in the table rather than hidden.
const ROUND_POOL = Number(process.env.BENCH_POOL_SIZE ?? 60_000)

/** A server under test: where it listens, how to count its rows, how to stop it. */
interface Target {
  name: string
  url: string
  countRows(): Promise<number>
  close(): Promise<void>
}

interface Figure {
  name: string
  /** CPU time of the servers' thread (this process's main thread) per answered request. */
  cpuUsPerRequest: number
  /** CPU time of the PostgreSQL server per answered request (PGlite's is in the thread's). */
  postgresCpuUsPerRequest: number
  rps: number
  p50Ms: number
  p99Ms: number
  okTotal: number
  failedTotal: number
  errorsTotal: number
  exhausted: boolean
  rows: number
}

/**
 * Signed form callbacks of every type, each distinct (its own task id), signed now so every
 * timestamp stays inside the 300 s tolerance for the run that follows.
 */
function signPool(url: string, size: number, tag: string): LoadRequest[] {
  const target = new URL('/callbacks', url)
  const nowMs = Date.now()
  const pool: LoadRequest[] = []
  for (let task = 0; pool.length < size; task++) {
    for (const sample of Object.values(sampleCallbacks(`bench-${tag}-${task}`, SERVICE_CODE))) {
      if (pool.length >= size) break
      // A client disconnect names no task, so its sample would be the same callback every time and
      // be deduplicated; a distinct session length keeps it distinct.
      const fields = 'hashed_id' in sample ? sample : { ...sample, session_duration: String(task) }
      const signed = signCallback(fields, { url: target.toString(), method: 'POST', secret: SECRET, nowMs })
      const body = Buffer.from(signed.body ?? '')
      pool.push({ path: target.pathname, headers: { ...signed.headers, 'content-length': String(body.length) }, body })
    }
  }
  return pool
}

async function baselineTarget(ctx: BenchContext): Promise<Target> {
  const db = await ctx.createDatabase()
  const baseline = await startBaseline(db.url)
  return {
    name: 'baseline: node:http + postgres.js, group commit',
    url: baseline.url,
    countRows: () => baseline.countRows(),
    async close() {
      await baseline.close()
      await db.drop()
    },
  }
}

async function livegateTarget(name: string, db: { url: string; drop: () => Promise<void> } | undefined): Promise<Target> {
  const { gateway, close } = await startBenchGateway({ ...(db ? { databaseUrl: db.url } : {}), service: { serviceCode: SERVICE_CODE, secret: SECRET } })
  const count = async () => {
    const answer = await gateway.database.db.execute(sql`select count(*) as n from callbacks`)
    return Number(resultRows<{ n: string | number }>(answer)[0]?.n ?? 0)
  }
  return {
    name,
    url: gateway.url,
    countRows: count,
    async close() {
      await close()
      await db?.drop()
    },
  }
}

/** Runs the rounds: every target in turn, each on fresh signed callbacks of its own. */
async function measure(ctx: BenchContext, targets: Target[]): Promise<Figure[]> {
  const runs: LoadResult[][] = targets.map(() => [])
  const cpuMs = targets.map(() => 0)
  const pgMs = targets.map(() => 0)
  const port = new URL(ctx.serverUrl).port
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, target] of targets.entries()) {
      const pool = signPool(target.url, ROUND_POOL, `${i}-${round}`)
      const before = mainThreadCpuMs()
      const pgBefore = postgresCpuMs(port)
      ;(runs[i] as LoadResult[]).push(await runLoad({ url: target.url, connections: CONNECTIONS, warmupMs: WARMUP_MS, durationMs: WINDOW_MS, pool }))
      cpuMs[i] = (cpuMs[i] as number) + mainThreadCpuMs() - before
      pgMs[i] = (pgMs[i] as number) + postgresCpuMs(port) - pgBefore
    }
    ctx.log(`ingest: round ${round + 1}/${ROUNDS}: ${targets.map((t, i) => `${t.name.split(':')[0]} ${runs[i]?.at(-1)?.rps.toFixed(0)}`).join(', ')} req/s`)
  }
  const figures: Figure[] = []
  for (const [i, target] of targets.entries()) {
    const own = runs[i] as LoadResult[]
    const okTotal = own.reduce((n, r) => n + r.okTotal, 0)
    const pooled = Float64Array.from(own.flatMap((r) => Array.from(r.latencies))).sort()
    const answered = own.reduce((n, r) => n + r.okTotal + r.failedTotal, 0)
    figures.push({
      name: target.name,
      cpuUsPerRequest: ((cpuMs[i] as number) * 1000) / answered,
      postgresCpuUsPerRequest: ((pgMs[i] as number) * 1000) / answered,
      rps: own.reduce((n, r) => n + r.measured, 0) / ((own.length * WINDOW_MS) / 1000),
      p50Ms: quantile(pooled, 0.5),
      p99Ms: quantile(pooled, 0.99),
      okTotal,
      failedTotal: own.reduce((n, r) => n + r.failedTotal, 0),
      errorsTotal: own.reduce((n, r) => n + r.errorsTotal, 0),
      exhausted: own.some((r) => r.exhausted),
      rows: await settledCount(target.countRows, okTotal),
    })
  }
  return figures
}

/**
 * A callback livegate spooled (database too slow or down) is answered 200 before its row exists;
 * give the spool a few seconds to drain before the count is judged.
 */
async function settledCount(count: () => Promise<number>, expected: number): Promise<number> {
  let rows = await count()
  for (let tries = 0; rows < expected && tries < 20; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 250))
    rows = await count()
  }
  return rows
}

function row(f: Figure, base: Figure): string[] {
  const lost = f.rows < f.okTotal ? ` **LOST ${f.okTotal - f.rows}**` : ''
  const dry = f.exhausted ? ' (pool ran dry: lower bound)' : ''
  return [
    `${f.name}${dry}`,
    f.rps.toFixed(0),
    ms(f.p50Ms),
    ms(f.p99Ms),
    ratio(f.rps, base.rps),
    Number.isFinite(f.cpuUsPerRequest) ? f.cpuUsPerRequest.toFixed(0) : '—',
    Number.isFinite(f.postgresCpuUsPerRequest) && !f.name.includes('PGlite') ? f.postgresCpuUsPerRequest.toFixed(0) : '—',
    `${f.okTotal} / ${f.rows}${lost}`,
    `${f.failedTotal} / ${f.errorsTotal}`,
  ]
}

/**
 * Ingest: the bare group-commit baseline, livegate on a PostgreSQL server, and livegate on
 * PGlite, all started first, then measured in interleaved rounds.
 */
export async function runIngestBench(ctx: BenchContext): Promise<BenchSection> {
  const targets: Target[] = []
  let figures: Figure[]
  try {
    targets.push(await baselineTarget(ctx))
    targets.push(await livegateTarget('livegate on PostgreSQL', await ctx.createDatabase()))
    targets.push(await livegateTarget('livegate on PGlite (memory, no fsync)', undefined))
    figures = await measure(ctx, targets)
  } finally {
    for (const target of targets) await target.close()
  }
  const [base, server] = figures as [Figure, Figure, Figure]
  const lost = figures.reduce((n, f) => n + Math.max(0, f.okTotal - f.rows), 0)
  return {
    title: 'Ingest',
    description:
      `Signed form callbacks of every type, each distinct, ${CONNECTIONS} keep-alive connections from a load generator in a worker thread. ` +
      `${ROUNDS} interleaved rounds: in each, every server gets ${WARMUP_MS / 1000} s of warm-up then ${WINDOW_MS / 1000} s measured; req/s and latencies pool the measured windows. ` +
      'livegate logs at its default level (info) into a sink. "server CPU µs/req" is the CPU time of the servers\' thread per answer (PGlite runs in it); "PostgreSQL CPU µs/req" is the server\'s, all its processes, per answer. "2xx / rows" checks that no acknowledged callback was lost: rows must be at least the 2xx count, warm-ups included.',
    columns: ['figure', 'req/s', 'p50 ms', 'p99 ms', 'ratio vs baseline', 'server CPU µs/req', 'PostgreSQL CPU µs/req', '2xx / rows', 'non-2xx / errors'],
    rows: figures.map((f) => row(f, base)),
    targets: [
      { name: 'ingest on PostgreSQL vs group-commit baseline', target: '≥ 0.80×', measured: ratio(server.rps, base.rps), met: server.rps >= 0.8 * base.rps },
      { name: 'ingest p99 vs baseline p99', target: '≤ 2.00×', measured: ratio(server.p99Ms, base.p99Ms), met: server.p99Ms <= 2 * base.p99Ms },
      { name: 'acknowledged callbacks lost', target: '0', measured: String(lost), met: lost === 0 },
    ],
    notes: ingestNotes(base, server),
    data: figures,
  }
}

/** Where the ingest gap comes from: the CPU each side spends per callback, and the profile. */
function ingestNotes(base: Figure, server: Figure): string {
  const total = (f: Figure) => f.cpuUsPerRequest + f.postgresCpuUsPerRequest
  return [
    `Where the time goes. On this machine the load generator, the servers and PostgreSQL share the same cores, so throughput follows the CPU each callback costs in all of them: ` +
      `the baseline spends ${base.cpuUsPerRequest.toFixed(0)} µs in Node and ${base.postgresCpuUsPerRequest.toFixed(0)} µs in PostgreSQL per callback, livegate ${server.cpuUsPerRequest.toFixed(0)} µs and ${server.postgresCpuUsPerRequest.toFixed(0)} µs: ` +
      `${(total(server) / total(base)).toFixed(1)}× the work, against ${(base.rps / server.rps).toFixed(1)}× the time.`,
    '',
    'A CPU profile of livegate under this load (node --cpu-prof, main thread, busy time) splits its Node share roughly as: the verdict 22% (form parsing, HMAC signature, dedupe key hash, typed parse, kept headers), ' +
      'postgres.js 20% (two thirds of it the socket writes of each batch\'s statements), the batch itself 16% (the rows and task states as JSON, folding, deriving task rows), fastify and node:http 11%, garbage collection 7%, logging 6% (one redacted line per callback), the rest 18%. ' +
      'PostgreSQL does more per callback than the baseline\'s insert: eight indexes on `callbacks` (the query filters need them), and the fold\'s upsert of each changed task (seven indexes, a jsonb state) and user in the same transaction.',
    '',
    'What was done: group commit (one transaction per batch of callbacks under the ingest lock; one batch in flight measured better than two), every batch statement a single jsonb literal (no describe step), four round trips a batch (BEGIN; the locks, the insert and the state reads together; the graph writes and NOTIFY together; COMMIT: each round trip of a busy process waits behind the requests queued on its event loop), fastify\'s two request log lines dropped on the callback route. ' +
      'What would meet 0.8×: fewer bytes and indexes per callback (the raw body as binary through COPY rather than hex in JSON; the callbacks indexes the queries do not need), a task row written with HOT updates (a lower fill factor, the sort columns out of its hot path), and above all cores: the gateway scales out as several processes behind a balancer on one PostgreSQL server (README, Performance), which this two-core machine, already running the load and the database, cannot show.',
  ].join('\n')
}
