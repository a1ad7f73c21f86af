import { availableParallelism, cpus } from 'node:os'
import postgres from 'postgres'
import { type BenchContext, type BenchSection, ms, quantile, ratio } from './bench.report.js'
import { combineLag, type LagSnapshot, lagBetween, lagQuantileMs, scrapeLag, settleByMetrics } from './ingest.lag.js'
import { BENCH_SERVICE, signPool } from './ingest.pool.js'
import { type LoadResult, runLoad } from './load.generate.js'
import { addSamples, emptySamples, sampleWaits, topEvents, type WaitSamples } from './lock.sampler.js'
import { startBaseline } from './baseline.server.js'
import { mainThreadCpuMs, postgresCpuMs, selfAndEndedChildrenCpuMs, treeCpuMs } from './process.cpu.js'
import { type ServeProcess, startServe } from './serve.process.js'

const CONNECTIONS = 100
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4)
const WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? 500)
const WINDOW_MS = Number(process.env.BENCH_WINDOW_MS ?? 2500)
const ROUND_POOL = Number(process.env.BENCH_POOL_SIZE ?? 60_000)
// `serve --workers` at its default on a server: one per core.
const CORES = availableParallelism()

interface Setup {
  name: string
  /** Where each of the two load generators sends its half of the connections. */
  urls: [string, string]
  /** The bare baseline, in this process: its CPU is this process's main thread, and it is no livegate. */
  baseline?: boolean
}

interface Figure {
  name: string
  rps: number
  p50Ms: number
  p99Ms: number
  okTotal: number
  notOk: number
  exhausted: boolean
  livegateCpuUsPerRequest: number
  postgresCpuUsPerRequest: number
  /** CPU of livegate, PostgreSQL and the load generators together, in cores, over the windows. */
  coresBusy: number
  lagP50Ms: number
  lagP99Ms: number
  catchUpMs: number
  waits: WaitSamples
}

/**
 * Two `livegate serve` processes on one database, the load split across both, beside one of them
 * taking the same load alone. Both setups run in interleaved rounds against the same processes
 * and database; in every window two load generators (a worker thread each, half the connections
 * each) send to one process or to one each, so the load side is the same shape in both.
 */
export async function runTwoProcessBench(ctx: BenchContext): Promise<BenchSection> {
  const db = await ctx.createDatabase()
  const processes: ServeProcess[] = []
  let figures: Figure[]
  let rows = 0
  let baselineRows = 0
  const baseline = await startBaseline(db.url)
  try {
    // One after the other: the first applies the migrations.
    processes.push(await startServe(db.url, BENCH_SERVICE))
    processes.push(await startServe(db.url, BENCH_SERVICE))
    processes.push(await startServe(db.url, BENCH_SERVICE, CORES))
    const [a, b, every] = processes as [ServeProcess, ServeProcess, ServeProcess]
    const setups: Setup[] = [
      { name: 'baseline: node:http + postgres.js, group commit', urls: [baseline.url, baseline.url], baseline: true },
      { name: 'one serve process, 1 worker', urls: [a.url, a.url] },
      { name: 'two serve processes of 1 worker, load split', urls: [a.url, b.url] },
      { name: `one serve process, ${CORES} workers (one per core)`, urls: [every.url, every.url] },
    ]
    figures = await measure(ctx, db.url, processes, setups)
    const sql = postgres(db.url, { max: 1, onnotice: () => {} })
    rows = Number((await sql<{ n: string }[]>`select count(*) as n from callbacks`)[0]?.n ?? 0)
    await sql.end()
    baselineRows = await baseline.countRows()
  } finally {
    for (const child of processes) await child.stop()
    await baseline.close()
    await db.drop()
  }
  const [bare, one, two, workers] = figures as [Figure, Figure, Figure, Figure]
  const okTotal = figures.reduce((n, f) => n + (f === bare ? 0 : f.okTotal), 0)
  const lost = Math.max(0, okTotal - rows) + Math.max(0, bare.okTotal - baselineRows)
  return {
    title: 'Ingest: serve processes and workers on one PostgreSQL server',
    description:
      `\`node --import tsx src/main.ts serve --workers 1\` started twice, and \`serve --workers ${CORES}\` (one ` +
      `worker per core) once, on one fresh database (logging at info into /dev/null), beside the bare ` +
      `group-commit server of the ingest section above (in the bench process, its own table in the same ` +
      `database), all taking the same load in the same turns. ${ROUNDS} interleaved rounds; in each, ${WARMUP_MS / 1000}` +
      ` s of warm-up then ${WINDOW_MS / 1000} s measured per setup, ` +
      `${CONNECTIONS} keep-alive connections from two load-generator processes of ${CONNECTIONS / 2}. "livegate ` +
      `CPU µs/req" adds every livegate process's CPU (every thread, workers included; the baseline: its thread). ` +
      `"lag" is livegate_projection_lag_seconds scraped from both processes' /metrics (the projector runs in ` +
      `whichever holds its lease; in the one-process setup the second process is up and may fold, but takes no ` +
      `callbacks). ` +
      '"catch-up" is how long after a window the projection took to fold everything acknowledged (waited for ' +
      'before the next window). "lock waits" counts samples of pg_stat_activity (every 50 ms during the windows) ' +
      "in which a backend of the database waited on a heavyweight lock other than a table's extension lock.",
    columns: [
      'setup',
      'req/s',
      'p50 ms',
      'p99 ms',
      'ratio vs one process',
      'livegate CPU µs/req',
      'PostgreSQL CPU µs/req',
      'cores busy',
      'lag p50 ms',
      'lag p99 ms',
      'catch-up ms',
      'lock waits / samples',
      'non-2xx',
    ],
    rows: figures.map((f) => [
      `${f.name}${f.exhausted ? ' (pool ran dry: lower bound)' : ''}`,
      f.rps.toFixed(0),
      ms(f.p50Ms),
      ms(f.p99Ms),
      ratio(f.rps, one.rps),
      f.livegateCpuUsPerRequest.toFixed(0),
      f.postgresCpuUsPerRequest.toFixed(0),
      f.coresBusy.toFixed(2),
      ms(f.lagP50Ms),
      ms(f.lagP99Ms),
      ms(f.catchUpMs),
      `${f.waits.lockWaitSamples} / ${f.waits.samples}`,
      String(f.notOk),
    ]),
    targets: [
      {
        name: 'two serve processes: samples with a lock wait',
        target: '0',
        measured: `${two.waits.lockWaitSamples} of ${two.waits.samples}`,
        met: two.waits.lockWaitSamples === 0,
      },
      {
        name: 'two serve processes vs one, same load (no collapse)',
        target: '≥ 0.80×',
        measured: ratio(two.rps, one.rps),
        met: two.rps >= 0.8 * one.rps,
      },
      {
        name: `ingest, serve with ${CORES} workers, vs one worker (same load, same turns)`,
        target: '≥ 1.00×',
        measured: ratio(workers.rps, one.rps),
        met: workers.rps >= one.rps,
      },
      {
        name: `ingest, serve with ${CORES} workers, vs the bare group-commit server (same load, same turns)`,
        target: '≥ 0.80×',
        measured: ratio(workers.rps, bare.rps),
        met: workers.rps >= 0.8 * bare.rps,
      },
      {
        name: 'acknowledged callbacks lost',
        target: '0',
        measured: `${lost} (${okTotal} 2xx, ${rows} rows; baseline ${bare.okTotal} 2xx, ${baselineRows} rows)`,
        met: lost === 0,
      },
    ],
    notes: [
      `One process of ${CORES} workers took ${ratio(workers.rps, one.rps)} the callbacks of one worker and ${ratio(workers.rps, bare.rps)}` +
        ` those of the bare group-commit server, ` +
        `at ${workers.livegateCpuUsPerRequest.toFixed(0)} µs of livegate CPU per callback (one worker: ${one.livegateCpuUsPerRequest.toFixed(0)}` +
        ` µs; the bare server ${bare.livegateCpuUsPerRequest.toFixed(0)} µs) ` +
        `and ${workers.coresBusy.toFixed(2)} cores busy (one worker ${one.coresBusy.toFixed(2)}): workers add ` +
        `throughput only where a core is idle for them, and here the load generators and PostgreSQL share the ` +
        `same ${CORES}.`,
      '',
      processNotes(one, two),
    ].join('\n'),
    data: { figures, rows, okTotal },
  }
}

async function measure(
  ctx: BenchContext,
  databaseUrl: string,
  processes: ServeProcess[],
  setups: Setup[],
): Promise<Figure[]> {
  const port = new URL(ctx.serverUrl).port
  const urls = processes.map((p) => p.url)
  const scrape = async () => combineLag(await Promise.all(urls.map(scrapeLag)))
  const totals = setups.map(() => ({
    runs: [] as LoadResult[],
    wallMs: 0,
    livegateMs: 0,
    pgMs: 0,
    allMs: 0,
    catchUpMs: 0,
    lag: undefined as LagSnapshot | undefined,
    waits: emptySamples(),
  }))
  // Every livegate process, whichever setup: the projector folds in whichever holds its lease.
  const livegateCpu = () => processes.reduce((n, p) => n + treeCpuMs(p.pid), 0)
  for (let round = 0; round < ROUNDS; round++) {
    for (const [s, setup] of setups.entries()) {
      const total = totals[s] as (typeof totals)[number]
      const pools = setup.urls.map((url, k) => signPool(url, ROUND_POOL / 2, `p${s}-${round}-${k}`))
      const lagBefore = await scrape()
      const cpu = setup.baseline ? mainThreadCpuMs : livegateCpu
      const before = { livegate: cpu(), pg: postgresCpuMs(port), self: selfAndEndedChildrenCpuMs() }
      const sampler = sampleWaits(databaseUrl)
      const startedAt = performance.now()
      const results = await Promise.all(
        setup.urls.map((url, k) =>
          runLoad({
            url,
            connections: CONNECTIONS / 2,
            warmupMs: WARMUP_MS,
            durationMs: WINDOW_MS,
            pool: pools[k] ?? [],
          }),
        ),
      )
      // Wall time as the CPU was counted: the load workers' start-up is in it as well as the windows.
      total.wallMs += performance.now() - startedAt
      addSamples(total.waits, await sampler.stop())
      const livegateMs = cpu() - before.livegate
      const pgMs = postgresCpuMs(port) - before.pg
      total.livegateMs += livegateMs
      total.pgMs += pgMs
      total.allMs += (setup.baseline ? 0 : livegateMs) + pgMs + selfAndEndedChildrenCpuMs() - before.self
      total.runs.push(...results)
      total.catchUpMs += await settleByMetrics(urls)
      const lag = lagBetween(lagBefore, await scrape())
      total.lag = total.lag ? combineLag([total.lag, lag]) : lag
    }
    ctx.log(
      `ingest (processes): round ${round + 1}/${ROUNDS}: ${setups.map((s, i) => `${s.name} ${(totals[i]?.runs.slice(-2).reduce((n, r) => n + r.rps, 0) ?? 0).toFixed(0)}`).join(', ')}` +
        ` req/s`,
    )
  }
  return setups.map((setup, s) => {
    const total = totals[s] as (typeof totals)[number]
    const answered = total.runs.reduce((n, r) => n + r.okTotal + r.failedTotal, 0)
    const pooled = Float64Array.from(total.runs.flatMap((r) => Array.from(r.latencies))).sort()
    const lag = total.lag as LagSnapshot
    return {
      name: setup.name,
      rps: total.runs.reduce((n, r) => n + r.measured, 0) / ((ROUNDS * WINDOW_MS) / 1000),
      p50Ms: quantile(pooled, 0.5),
      p99Ms: quantile(pooled, 0.99),
      okTotal: total.runs.reduce((n, r) => n + r.okTotal, 0),
      notOk: total.runs.reduce((n, r) => n + r.failedTotal + r.errorsTotal, 0),
      exhausted: total.runs.some((r) => r.exhausted),
      livegateCpuUsPerRequest: (total.livegateMs * 1000) / answered,
      postgresCpuUsPerRequest: (total.pgMs * 1000) / answered,
      coresBusy: total.allMs / total.wallMs,
      lagP50Ms: lagQuantileMs(lag, 0.5),
      lagP99Ms: lagQuantileMs(lag, 0.99),
      catchUpMs: total.catchUpMs / ROUNDS,
      waits: total.waits,
    }
  })
}

/** What this machine can and cannot show, in this run's figures. */
function processNotes(one: Figure, two: Figure): string {
  const cores = cpus().length
  return [
    `What ${cores} cores can show. Two livegate processes, PostgreSQL and the load generators share ${cores}` +
      ` cores: with one process they kept ${one.coresBusy.toFixed(2)} cores busy, with two ${two.coresBusy.toFixed(2)}` +
      `. ` +
      `When that is near ${cores} in both setups, a second process cannot add throughput here, since there is no ` +
      `idle core for it; what the figure can show is that splitting the load across two processes does not ` +
      `serialize them: ` +
      `${ratio(two.rps, one.rps)} the throughput of one, p99 ${ms(two.p99Ms)} ms against ${ms(one.p99Ms)} ms, ` +
      `and ${two.waits.lockWaitSamples} of ${two.waits.samples} samples with a backend waiting on a heavyweight ` +
      `lock (most ungranted lock requests seen at once: ${two.waits.maxUngranted}).`,
    '',
    `Where the active backends were, sampled: one process ${topEvents(one.waits)}; two processes ${topEvents(two.waits)}` +
      `. ` +
      'The acknowledging write is one autocommitted statement per batch with no lock of its own, so what remains ' +
      'shared is the WAL and its flush, as for any writer; the projector folds in whichever process holds its ' +
      'lease (a try-lock: the other passes, never waits).',
    '',
    notifyLockNote(one.waits, two.waits),
    '',
    'What it cannot show: that ingest capacity grows with processes. That needs a process per idle core (or per ' +
      'machine) with PostgreSQL on cores of its own; on this machine the one-process figure already uses the cores ' +
      'the second would need. ' +
      `The livegate CPU per callback (${one.livegateCpuUsPerRequest.toFixed(0)} µs with one process, ${two.livegateCpuUsPerRequest.toFixed(0)}` +
      ` µs with two) is what each added core buys: about ${(1e6 / two.livegateCpuUsPerRequest).toFixed(0)}` +
      ` callbacks a second of livegate work per core, before PostgreSQL's ${two.postgresCpuUsPerRequest.toFixed(0)}` +
      ` µs.`,
  ].join('\n')
}

/** What the lock waits were, if any: PostgreSQL's NOTIFY lock is named, since the doorbell takes it. */
function notifyLockNote(...waits: WaitSamples[]): string {
  const on: Record<string, number> = {}
  for (const w of waits) for (const [key, n] of Object.entries(w.ungrantedOn)) on[key] = (on[key] ?? 0) + n
  const seen = Object.entries(on).sort(([, a], [, b]) => b - a)
  const events = waits.flatMap((w) => Object.entries(w.byEvent)).filter(([key]) => key.startsWith('Lock:'))
  const named =
    events.length === 0
      ? ''
      : `Backends seen waiting on a heavyweight lock, by wait event (summed over samples, both setups): ${events.map(([key, n]) => `${key} ${n}`).join(', ')}` +
        `; \`Lock:extend\` is a table's extension lock, PostgreSQL's own when two backends add pages to one table, ` +
        `and not counted as a lock wait above. `
  if (seen.length === 0) return `${named}No lock request was seen waiting in the pg_locks samples.`
  const notify = seen.filter(([key]) => key.startsWith('object pg_database 0 ')).reduce((n, [, count]) => n + count, 0)
  return (
    named +
    `Lock requests seen waiting (summed over samples): ${seen.map(([key, n]) => `${key} ${n}`).join(', ')}. ` +
    (notify > 0
      ? `"object pg_database 0 AccessExclusiveLock" is PostgreSQL's NOTIFY lock (async.c, PreCommit_Notify): a ` +
        `transaction that calls pg_notify takes it before commit and holds it until its commit is flushed, ` +
        `cluster-wide, so every acknowledging statement that rings the doorbell commits one after another, on one ` +
        `instance or several. ` +
        'It is the one lock left on the acknowledgement path; taking the doorbell out of the acknowledging ' +
        'statement (a NOTIFY in a statement of its own after the commit, or none, since the projector also looks ' +
        'every tickMs) would remove it.'
      : '')
  )
}
