import { execFileSync, spawn } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './free.port.js'

/** A PostgreSQL cluster of a test's own, which the test may stop and start at will. */
export interface PrivateCluster {
  url: string
  /** `pg_ctl start`, waiting until it accepts connections. */
  start(): Promise<void>
  /** `pg_ctl stop -m fast`: sessions are cut, in-flight transactions roll back. */
  stop(): Promise<void>
  /** Stops it (if running) and removes its files. */
  destroy(): Promise<void>
}

const PG_ROOT = '/usr/lib/postgresql'

/** The newest Debian PostgreSQL binaries, or undefined when none are installed. */
export function postgresBin(): string | undefined {
  if (!existsSync(PG_ROOT)) return undefined
  const versions = readdirSync(PG_ROOT)
    .filter((name) => existsSync(join(PG_ROOT, name, 'bin', 'pg_ctl')))
    .sort((a, b) => a.localeCompare(b, undefined, { numeric: true }))
  const newest = versions.at(-1)
  return newest ? join(PG_ROOT, newest, 'bin') : undefined
}

/**
 * initdb into a temp directory and start it on a free loopback port, as .ci/run does: PostgreSQL
 * refuses to run as root, so as root every binary runs as the `postgres` user.
 */
export async function startPrivateCluster(): Promise<PrivateCluster> {
  const bin = postgresBin()
  if (!bin) throw new Error(`no PostgreSQL binaries under ${PG_ROOT}`)
  const dir = mkdtempSync(join(tmpdir(), 'livegate-pg-'))
  const asRoot = process.getuid?.() === 0
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim())
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim())
    chownSync(dir, uid, gid)
  }
  const data = join(dir, 'data')
  const log = join(dir, 'server.log')
  const run = (tool: string, args: string[]) => runTool(asRoot, join(bin, tool), args, log)
  await run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres'])
  const port = await freePort()
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200`
  let running = false
  const cluster: PrivateCluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async start() {
      await run('pg_ctl', ['-D', data, '-l', log, '-w', '-o', options, 'start'])
      running = true
    },
    async stop() {
      await run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop'])
      running = false
    },
    async destroy() {
      if (running) await cluster.stop().catch(() => {})
      rmSync(dir, { recursive: true, force: true })
    },
  }
  await cluster.start()
  return cluster
}

function runTool(asRoot: boolean, tool: string, args: string[], log: string): Promise<void> {
  const [command, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', tool, ...args]] : [tool, args]
  return new Promise((resolve, reject) => {
    // The server started by pg_ctl outlives it, so only the exit is awaited, never the pipes' end.
    const child = spawn(command as string, argv as string[], { cwd: '/', stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk
    })
    child.on('error', reject)
    child.on('exit', (code) => {
      if (code === 0) return resolve()
      const serverLog = existsSync(log) ? readFileSync(log, 'utf8').slice(-2000) : ''
      reject(new Error(`${tool} ${args.join(' ')} exited ${code}: ${stderr}\n${serverLog}`))
    })
  })
}
