import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort } from '../support/free.port.js'

/** A `livegate serve` process started by the bench, as an operator would start one. */
export interface ServeProcess {
  pid: number
  url: string
  /** SIGTERM, then waits for the exit (SIGKILL after 10 s). */
  stop(): Promise<void>
}

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url))

/**
 * Starts `node --import tsx src/main.ts serve` on `databaseUrl` with a config file of its own
 * (one service, loopback, a spool folder of its own, and `settings` beside them) with `workers` processes behind its
 * port,
 * logging at the default level into /dev/null, and waits until every worker is ready. tsx only transpiles as modules
 * load, so what
 * runs is the code `npm start` runs. `BENCH_SERVE_NODE_ARGS` (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`) goes
 * to every serve process's node, to profile livegate as deployed (NODE_OPTIONS refuses --cpu-prof).
 */
export async function startServe(
  databaseUrl: string,
  service: { serviceCode: string; secret: string },
  workers = 1,
  settings: Record<string, unknown> = {},
): Promise<ServeProcess> {
  const scratch = mkdtempSync(join(tmpdir(), 'livegate-bench-serve-'))
  const port = await freePort()
  const configFile = join(scratch, 'livegate.json')
  writeFileSync(
    configFile,
    JSON.stringify({
      host: '127.0.0.1',
      database: { url: databaseUrl, dataDir: scratch },
      spool: { dir: join(scratch, 'spool') },
      services: [{ serviceCode: service.serviceCode, secrets: [service.secret] }],
      ...settings,
    }),
  )
  const child: ChildProcess = spawn(
    process.execPath,
    [
      ...(process.env.BENCH_SERVE_NODE_ARGS ?? '').split(' ').filter(Boolean),
      '--import',
      'tsx',
      MAIN,
      'serve',
      '--config',
      configFile,
      '--workers',
      String(workers),
    ],
    {
      env: {
        ...process.env,
        PORT: String(port),
        LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
        DATABASE_URL: databaseUrl,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  )
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-4000)
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 180_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`livegate serve exited with ${child.exitCode}: ${stderr}`)
    try {
      // Ready for the whole: with several workers, every one of them listening and answering.
      const ready = (await (await fetch(`${url}/readyz`)).json()) as { ready: boolean; workers?: unknown[] }
      if (ready.ready && (ready.workers?.length ?? 1) === workers) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`livegate serve did not answer within 180 s: ${stderr}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return {
    pid: child.pid as number,
    url,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
        await exited
        clearTimeout(timer)
      }
      rmSync(scratch, { recursive: true, force: true })
    },
  }
}
