import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { ROOT } from '../support/livegate.process.js'
import { type BenchContext, type BenchSection, ratio } from './bench.report.js'
import { treePids } from './process.cpu.js'

const RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 3)
// Long enough for start-up garbage to be collected and timers to settle into their idle rhythm.
const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 4000)
const _MiB = 2 ** 20

// The bare ceiling: Node itself, listening on a socket and answering.
const BARE_SERVER =
  `require('node:http').createServer((q, s) => s.end('ok')).listen(0, '127.0.0.1', function () { ` +
  `console.log('listening on http://127.0.0.1:' + this.address().port) })`

interface Start {
  readyMs: number
  idleRssMiB: number
}

interface Figure {
  name: string
  runs: Start[]
  readyMs: number
  idleRssMiB: number
}

/**
 * Spawns a server, times spawn → ready (the first 200 from `readyPath`, or the address line when
 * there is none), then lets it idle and reads its resident memory from /proc.
 */
async function measureStart(
  args: string[],
  env: NodeJS.ProcessEnv,
  readyPath: string | undefined,
  where: { cwd?: string; command?: string } = {},
): Promise<Start> {
  const started = performance.now()
  // Its own process group, so `npm start`'s child goes with it.
  const child = spawn(where.command ?? process.execPath, args, {
    cwd: where.cwd ?? ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  try {
    const url = await addressOf(child)
    if (readyPath) await pollReady(new URL(readyPath, url))
    const readyMs = performance.now() - started
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS))
    return { readyMs, idleRssMiB: treeRssKiB(child.pid as number) / 1024 }
  } finally {
    const tree = treePids(child.pid as number)
    try {
      process.kill(-(child.pid as number), 'SIGKILL')
    } catch {
      // Already gone.
    }
    // Gone, not just signalled: the next start on the same data directory finds its lock free.
    for (let waited = 0; waited < 10_000 && tree.some((pid) => existsSync(`/proc/${pid}`)); waited += 20)
      await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

// The process and its children (npm start runs node under npm): what the machine holds for it.
function treeRssKiB(pid: number): number {
  return treePids(pid).reduce((total, member) => total + rssKiB(member), 0)
}

/**
 * What a new user's first try costs: a fresh clone, `npm ci` (which builds dist/ once, in
 * `prepare`), then `npm start` to the first 200 from /healthz on the default embedded database in
 * ./data (so the first start runs initdb), and again for the second start.
 */
async function freshClone(scratch: string): Promise<{ installMs: number; first: Start; second: Start }> {
  const clone = join(scratch, 'clone')
  execFileSync('git', ['clone', '--quiet', ROOT, clone], { stdio: 'ignore' })
  const installStarted = performance.now()
  execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error', '--prefer-offline'], {
    cwd: clone,
    stdio: 'ignore',
  })
  const installMs = performance.now() - installStarted
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? scratch, PORT: '0' }
  const first = await measureStart(['start'], env, '/healthz', { cwd: clone, command: 'npm' })
  const second = await measureStart(['start'], env, '/healthz', { cwd: clone, command: 'npm' })
  return { installMs, first, second }
}

function addressOf(child: ChildProcess): Promise<string> {
  let printed = ''
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no address within 240 s: ${printed}`)), 240_000)
    child.stdout?.on('data', (chunk: Buffer) => {
      printed += chunk
      const match = /listening on (http:\/\/[^,\s"]+)/.exec(printed)
      if (match) {
        clearTimeout(timer)
        resolve(match[1] as string)
      }
    })
    child.stderr?.on('data', (chunk: Buffer) => {
      printed += chunk
    })
    child.once('exit', (code) => reject(new Error(`exited ${code}: ${printed}`)))
  })
}

async function pollReady(url: URL): Promise<void> {
  for (;;) {
    const answer = await fetch(url).catch(() => undefined)
    if (answer?.status === 200) return
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

function rssKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN)
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] as number
}

async function figure(name: string, run: () => Promise<Start>): Promise<Figure> {
  const runs: Start[] = []
  for (let i = 0; i < RUNS; i++) runs.push(await run())
  return { name, runs, readyMs: median(runs.map((r) => r.readyMs)), idleRssMiB: median(runs.map((r) => r.idleRssMiB)) }
}

/**
 * Start-up and idle memory of `livegate serve` as `npm start` and a deployment run it (the
 * compiled JavaScript in dist/, built first),
 * on a PostgreSQL server (a first start that migrates an empty database, then restarts) and on
 * the embedded PGlite, beside a bare node:http process.
 */
export async function runStartupBench(ctx: BenchContext): Promise<BenchSection> {
  const scratch = mkdtempSync(join(tmpdir(), 'livegate-startup-'))
  const configFile = join(scratch, 'livegate.json')
  writeFileSync(
    configFile,
    JSON.stringify({ port: 0, host: '127.0.0.1', services: [{ serviceCode: 'TESTING', secrets: ['bench-secret'] }] }),
  )
  const db = await ctx.createDatabase()
  const figures: Figure[] = []
  try {
    execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'ignore' })
    const serve = [join(ROOT, 'dist/main.js'), 'serve', '--config', configFile]
    const env = (extra: Record<string, string>) => ({
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? scratch,
      LOG_LEVEL: 'info',
      ...extra,
    })
    figures.push(await figure('bare node:http', () => measureStart(['-e', BARE_SERVER], env({}), undefined)))
    const onServer = env({ DATABASE_URL: db.url, LIVEGATE_DATA_DIR: join(scratch, 'data') })
    // One gateway process (the targets' figure); a server's default, one worker per core, after.
    const serveOne = [...serve, '--workers', '1']
    // Only one start finds the database empty; every later one is a restart.
    const first = await measureStart(serveOne, onServer, '/readyz')
    figures.push({
      name: 'livegate on PostgreSQL, 1 worker, first start (applies the migrations)',
      runs: [first],
      readyMs: first.readyMs,
      idleRssMiB: first.idleRssMiB,
    })
    figures.push(
      await figure('livegate on PostgreSQL, 1 worker, restart', () => measureStart(serveOne, onServer, '/readyz')),
    )
    figures.push(
      await figure(
        `livegate on PostgreSQL, ${availableParallelism()} workers (the default here: one per core), restart`,
        () => measureStart(serve, onServer, '/readyz'),
      ),
    )
    figures.push(
      await figure('livegate on PGlite in memory', () =>
        measureStart(serve, env({ LIVEGATE_DATA_DIR: 'memory://' }), '/readyz'),
      ),
    )
    // The default: PGlite in a data directory. Only the first start runs initdb.
    const onDisk = env({ LIVEGATE_DATA_DIR: join(scratch, 'pglite-data') })
    const initdb = await measureStart(serve, onDisk, '/readyz')
    figures.push({
      name: 'livegate on PGlite in a data directory (the default), first start (initdb)',
      runs: [initdb],
      readyMs: initdb.readyMs,
      idleRssMiB: initdb.idleRssMiB,
    })
    figures.push(
      await figure('livegate on PGlite in a data directory (the default), restart', () =>
        measureStart(serve, onDisk, '/readyz'),
      ),
    )
    if (process.env.BENCH_FRESH_CLONE !== '0') {
      const fresh = await freshClone(scratch)
      ctx.log(`startup: fresh clone npm ci ${(fresh.installMs / 1000).toFixed(0)} s`)
      figures.push({
        name: `npm start on a fresh clone, after npm ci (${(fresh.installMs / 1000).toFixed(0)} s, building once)`,
        runs: [fresh.first],
        readyMs: fresh.first.readyMs,
        idleRssMiB: fresh.first.idleRssMiB,
      })
      figures.push({
        name: 'npm start on that clone, second start',
        runs: [fresh.second],
        readyMs: fresh.second.readyMs,
        idleRssMiB: fresh.second.idleRssMiB,
      })
    }
    ctx.log(
      `startup: ${figures.map((f) => `${f.name.split(',')[0]} ${f.readyMs.toFixed(0)}` + ` ms ${f.idleRssMiB.toFixed(0)}` + ` MiB`).join('; ')}`,
    )
  } finally {
    await db.drop()
    rmSync(scratch, { recursive: true, force: true })
  }
  const [bare, , restart] = figures as [Figure, Figure, Figure, Figure]
  const worst = Math.max(...figures.slice(1, 3).map((f) => f.readyMs))
  const idle = Math.max(...figures.slice(1, 3).map((f) => f.idleRssMiB))
  // The default: a data directory, on its first start (a first try) and after.
  const pgliteIdle = Math.max(
    ...figures
      .filter((f) => f.name.includes('data directory') || f.name.startsWith('npm start'))
      .map((f) => f.idleRssMiB),
  )
  const npmStart = figures.find((f) => f.name.startsWith('npm start on a fresh clone'))
  return {
    title: 'Startup and idle memory',
    description:
      `\`node dist/main.js serve\`, as \`npm start\` runs it after building, spawned ${RUNS} times per figure ` +
      `(median shown): time from spawn to the first 200 from /readyz (database reachable, migrations applied, ` +
      `listening), ` +
      `then resident memory (VmRSS, of the process and its children: with several workers, the primary and every ` +
      `worker) after ${IDLE_MS / 1000} s idle; with several workers, ready is the first 200 from /readyz, which ` +
      `answers for the workers listening then. The bare figure is \`node -e\` with a node:http server, spawn to ` +
      `listening.`,
    columns: ['figure', 'spawn → ready ms', 'vs bare', 'idle RSS MiB', 'vs bare'],
    rows: figures.map((f) => [
      f.name,
      f.readyMs.toFixed(0),
      ratio(f.readyMs, bare.readyMs),
      f.idleRssMiB.toFixed(0),
      ratio(f.idleRssMiB, bare.idleRssMiB),
    ]),
    targets: [
      {
        name: 'startup to ready on PostgreSQL (first start and restart)',
        target: '≤ 2000 ms',
        measured: `${worst.toFixed(0)} ms`,
        met: worst <= 2000,
      },
      { name: 'idle RSS on PostgreSQL', target: '≤ 150 MiB', measured: `${idle.toFixed(0)} MiB`, met: idle <= 150 },
      {
        name: 'idle RSS on PGlite in a data directory, the default (first start, restart, npm start)',
        target: '≤ 400 MiB',
        measured: `${pgliteIdle.toFixed(0)} MiB`,
        met: pgliteIdle <= 400,
      },
      ...(npmStart
        ? [
            {
              name: 'npm start on a fresh clone, after npm ci, to /healthz',
              target: '≤ 10000 ms',
              measured: `${npmStart.readyMs.toFixed(0)} ms`,
              met: npmStart.readyMs <= 10_000,
            },
          ]
        : []),
    ],
    notes:
      `Run from source through tsx (\`npm run livegate -- serve\`, as the tests do), the same start takes about ` +
      `twice as long and 80 MiB more: tsx compiles and resolves every module through its loader thread. Restart ` +
      `median ${restart.readyMs.toFixed(0)} ms over ${RUNS} runs: ${restart.runs.map((r) => r.readyMs.toFixed(0)).join(', ')}` +
      ` ms.`,
    data: figures,
  }
}
