import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, totalmem, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { loadConfig, MEMORY_DATA_DIR } from '../../src/config/index.js'
import { startGateway } from '../../src/http/gateway.start.js'
import { signCallback } from '../../src/ingest/callback.sign.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { startPrivateCluster } from '../support/postgres.cluster.js'
import { startBaseline } from './baseline.server.js'
import { type LoadRequest, type LoadResult, runLoad } from './load.generate.js'

// Short fixed windows keep the whole run under three minutes on a two-core machine.
const CONNECTIONS = 100
const WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? 2000)
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 8000)
const SECRET = 'bench-secret'
const SERVICE_CODE = 'TESTING'
// Sized above what the baseline reaches in warm-up + window (~20k/s in the ceiling), so
// the pool never runs dry; a pool that does is flagged in the table rather than hidden.
const POOL_SIZE = Number(process.env.BENCH_POOL_SIZE ?? 200_000)

interface Figure {
  name: string
  result: LoadResult
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

function load(url: string, pool: LoadRequest[]): Promise<LoadResult> {
  return runLoad({ url, connections: CONNECTIONS, warmupMs: WARMUP_MS, durationMs: DURATION_MS, pool })
}

/** A fresh database on the server, so livegate's migrations and rows never meet a previous run's. */
async function createDatabase(serverUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `livegate_bench_${randomBytes(4).toString('hex')}`
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database ${name}`)
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async drop() {
      await admin.unsafe(`drop database if exists ${name} with (force)`)
      await admin.end()
    },
  }
}

async function benchBaseline(databaseUrl: string): Promise<Figure> {
  const baseline = await startBaseline(databaseUrl)
  try {
    const pool = signPool(baseline.url, POOL_SIZE, 'base')
    const result = await load(baseline.url, pool)
    return { name: 'baseline: node:http + postgres.js, group commit', result, rows: await baseline.countRows() }
  } finally {
    await baseline.close()
  }
}

async function benchLivegate(name: string, databaseUrl: string | undefined, tag: string): Promise<Figure> {
  const scratch = mkdtempSync(join(tmpdir(), 'livegate-bench-'))
  const config = loadConfig({
    env: {},
    value: {
      port: 0,
      host: '127.0.0.1',
      log: { level: 'silent' },
      database: databaseUrl ? { url: databaseUrl, dataDir: scratch } : { dataDir: MEMORY_DATA_DIR },
      spool: { dir: join(scratch, 'spool') },
      services: [{ serviceCode: SERVICE_CODE, secrets: [SECRET] }],
    },
  })
  const gateway = await startGateway(config)
  try {
    const pool = signPool(gateway.url, POOL_SIZE, tag)
    const result = await load(gateway.url, pool)
    const rows = await settledCount(async () => {
      const answer = await gateway.database.db.execute<{ n: string | number }>(sql`select count(*) as n from callbacks`)
      // postgres.js answers an array of rows, PGlite an object holding them.
      const list = (Array.isArray(answer) ? answer : (answer as unknown as { rows: { n: string | number }[] }).rows) as { n: string | number }[]
      return Number(list[0]?.n ?? 0)
    }, result.okTotal)
    return { name, result, rows }
  } finally {
    await gateway.close()
    rmSync(scratch, { recursive: true, force: true })
  }
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

function machine(serverVersion: string): string {
  const memGiB = (totalmem() / 2 ** 30).toFixed(1)
  let nproc = String(cpus().length)
  try {
    nproc = execFileSync('nproc', { encoding: 'utf8' }).trim()
  } catch {
    // cpus().length stands in where nproc is missing
  }
  return `nproc ${nproc}, ${memGiB} GiB memory, ${cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}, ${serverVersion}`
}

function table(figures: Figure[]): string {
  const base = figures[0]?.result.rps ?? Number.NaN
  const fmt = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '—')
  const lines = [
    '| figure | req/s | p50 ms | p99 ms | ratio vs baseline | 2xx / rows | non-2xx / errors |',
    '| --- | ---: | ---: | ---: | ---: | --- | --- |',
  ]
  for (const { name, result, rows } of figures) {
    const lost = rows < result.okTotal ? ` **LOST ${result.okTotal - rows}**` : ''
    const dry = result.exhausted ? ' (pool ran dry: lower bound)' : ''
    lines.push(
      `| ${name}${dry} | ${result.rps.toFixed(0)} | ${fmt(result.p50Ms)} | ${fmt(result.p99Ms)} | ${(result.rps / base).toFixed(3)}× | ${result.okTotal} / ${rows}${lost} | ${result.failedTotal} / ${result.errorsTotal} |`,
    )
  }
  return lines.join('\n')
}

async function main() {
  const external = process.env.BENCH_DATABASE_URL || undefined
  const cluster = external ? undefined : await startPrivateCluster()
  const serverUrl = external ?? (cluster?.url as string)
  const figures: Figure[] = []
  let serverVersion = 'PostgreSQL ?'
  try {
    const probe = postgres(serverUrl, { max: 1, onnotice: () => {} })
    const [version] = await probe<{ server_version: string; fsync: string }[]>`select current_setting('server_version') as server_version, current_setting('fsync') as fsync`
    await probe.end()
    serverVersion = `PostgreSQL ${version?.server_version} (fsync ${version?.fsync}, ${external ? 'BENCH_DATABASE_URL' : 'private cluster'})`
    console.error(`bench: ${serverVersion}; ${CONNECTIONS} connections, ${WARMUP_MS} ms warm-up, ${DURATION_MS} ms measured`)

    const baseDb = await createDatabase(serverUrl)
    try {
      figures.push(await benchBaseline(baseDb.url))
    } finally {
      await baseDb.drop()
    }
    console.error(`bench: baseline done`)

    const gatewayDb = await createDatabase(serverUrl)
    try {
      figures.push(await benchLivegate('livegate on PostgreSQL', gatewayDb.url, 'pg'))
    } finally {
      await gatewayDb.drop()
    }
    console.error(`bench: livegate on PostgreSQL done`)

    figures.push(await benchLivegate('livegate on PGlite (memory, no fsync)', undefined, 'lite'))
    console.error(`bench: livegate on PGlite done`)
    for (const f of figures) console.error(`bench: ${f.name}: mean ${f.result.meanMs.toFixed(1)} ms, in flight by Little ${((f.result.rps * f.result.meanMs) / 1000).toFixed(0)}`)
  } finally {
    await cluster?.destroy()
  }

  const report = [
    '# Benchmark results',
    '',
    `Measured ${new Date().toISOString()} by \`npm run bench\` (test/bench/bench.run.ts).`,
    '',
    `Machine: ${machine(serverVersion)}.`,
    '',
    '## Ingest',
    '',
    `Signed form callbacks of every type, each distinct, ${CONNECTIONS} keep-alive connections, ${WARMUP_MS / 1000} s warm-up then ${DURATION_MS / 1000} s measured, load generated in the same process as the servers. ` +
      'Ratios are the only figures that carry from run to run: the machine is shared and noisy. ' +
      'The load generator shares the servers\' event loop (one Node process on the same cores), which holds every figure, the baseline\'s most, below what a separate client would see. ' +
      '"2xx / rows" checks that no acknowledged callback was lost (rows must be at least the 2xx count, warm-up included).',
    '',
    table(figures),
    '',
  ].join('\n')
  writeFileSync(fileURLToPath(new URL('./RESULTS.md', import.meta.url)), report)
  console.log(report)
  if (figures.some((f) => f.rows < f.result.okTotal)) process.exitCode = 1
}

await main()
