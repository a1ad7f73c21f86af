import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync } from 'node:fs'
import { availableParallelism, cpus, totalmem } from 'node:os'
import { fileURLToPath } from 'node:url'
import postgres from 'postgres'
import { startPrivateCluster } from '../support/postgres.cluster.js'
import { writeNodeResults } from './bench.nodes.js'
import type { BenchContext, BenchSection } from './bench.report.js'

/**
 * `npm run bench`: every part beside its own baseline, in one run, on one machine. Parts are
 * loaded by name so `BENCH_ONLY=query,fanout` runs a few (a partial run still writes its own
 * results, but never over the committed RESULTS.md). Each Node writes its own results, and the
 * page shows them side by side: run it once per Node (`npm run bench:node24`, bench.node24.ts).
 */
const PARTS: Record<string, { file: string; run: string }> = {
  ingest: { file: './ingest.bench.js', run: 'runIngestBench' },
  query: { file: './query.bench.js', run: 'runQueryBench' },
  fanout: { file: './fanout.bench.js', run: 'runFanoutBench' },
  startup: { file: './startup.bench.js', run: 'runStartupBench' },
  metrics: { file: './audience.bench.js', run: 'runMetricsBench' },
  delivery: { file: './delivery.bench.js', run: 'runDeliveryBench' },
  alerts: { file: './alerts.bench.js', run: 'runAlertsBench' },
  archive: { file: './archive.bench.js', run: 'runArchiveBench' },
  timeline: { file: './timeline.bench.js', run: 'runTimelineBench' },
  auth: { file: './auth.bench.js', run: 'runAuthBench' },
}

function machine(serverVersion: string): string {
  const memGiB = (totalmem() / 2 ** 30).toFixed(1)
  let nproc = String(cpus().length)
  try {
    nproc = execFileSync('nproc', { encoding: 'utf8' }).trim()
  } catch {
    // cpus().length stands in where nproc is missing
  }
  return (
    `nproc ${nproc} (so \`serve --workers\` is ${availableParallelism()} here, one per core, and the figures with ` +
    `that many workers stand beside one worker), ${memGiB} GiB memory, ${cpus()[0]?.model ?? 'unknown CPU'}, ` +
    `Node ${process.version}` +
    `, ${serverVersion}`
  )
}

function context(serverUrl: string): BenchContext {
  return {
    serverUrl,
    log: (line) => console.error(`bench: ${line}`),
    async createDatabase() {
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
    },
  }
}

async function main() {
  const only = (process.env.BENCH_ONLY ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean)
  const unknown = only.filter((name) => !PARTS[name])
  if (unknown.length > 0)
    throw new Error(`BENCH_ONLY names no part: ${unknown.join(', ')} (parts: ${Object.keys(PARTS).join(', ')})`)
  const chosen = only.length > 0 ? only : Object.keys(PARTS)
  const started = Date.now()
  const external = process.env.BENCH_DATABASE_URL || undefined
  const cluster = external ? undefined : await startPrivateCluster()
  const serverUrl = external ?? (cluster?.url as string)
  const sections: BenchSection[] = []
  let serverVersion = 'PostgreSQL ?'
  try {
    const probe = postgres(serverUrl, { max: 1, onnotice: () => {} })
    const [version] = await probe<
      { server_version: string; fsync: string }[]
    >`select current_setting('server_version') as server_version, current_setting('fsync') as fsync`
    await probe.end()
    serverVersion =
      `PostgreSQL ${version?.server_version} (fsync ${version?.fsync}, ${external ? 'BENCH_DATABASE_URL' : 'private cluster'}` +
      `)`
    const ctx = context(serverUrl)
    ctx.log(`${serverVersion}; parts: ${chosen.join(', ')}`)
    for (const name of chosen) {
      const part = PARTS[name] as { file: string; run: string }
      if (!existsSync(fileURLToPath(new URL(part.file.replace(/\.js$/, '.ts'), import.meta.url)))) {
        ctx.log(`${name}: not built yet, skipped`)
        continue
      }
      // A part hands back one section, or several (ingest adds its two-process figure).
      type Run = (ctx: BenchContext) => Promise<BenchSection | BenchSection[]>
      const module = (await import(part.file)) as Record<string, Run>
      const begun = Date.now()
      sections.push(...[await (module[part.run] as Run)(ctx)].flat())
      ctx.log(`${name} done in ${((Date.now() - begun) / 1000).toFixed(0)} s`)
    }
  } finally {
    await cluster?.destroy()
  }

  const seconds = Math.round((Date.now() - started) / 1000)
  const targets = sections.flatMap((section) => section.targets)
  // A full run replaces its Node's committed results; a partial one goes to the ignored results/ folder.
  // Either way the page beside them shows every Node's run side by side (test/bench/bench.nodes.ts).
  const full = chosen.length === Object.keys(PARTS).length
  const into = new URL(full ? './' : './results/', import.meta.url)
  mkdirSync(into, { recursive: true })
  const results = {
    node: process.version,
    measuredAt: new Date().toISOString(),
    seconds,
    machine: machine(serverVersion),
    parts: chosen,
    targets,
    sections,
  }
  console.log(writeNodeResults(into, full ? 'RESULTS' : 'partial', results))
  if (targets.some((t) => t.name === 'acknowledged callbacks lost' && !t.met)) process.exitCode = 1
}

await main()
