import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { freePort } from './free.port.js'
import { postgresBin } from './postgres.cluster.js'

// The topology of issue 44 as private processes from Debian's packages: PgBouncer in transaction
// mode in front of a primary, and a streaming replica made with pg_basebackup. Both refuse to run
// as root, so as root they run as the `postgres` user, as .ci/run does.

export const PGBOUNCER = '/usr/sbin/pgbouncer'

/** Whether this machine has what the topology needs. */
export const topologyAvailable = () => existsSync(PGBOUNCER) && postgresBin() !== undefined

const asRoot = () => process.getuid?.() === 0

/** A fresh temporary folder the `postgres` user owns (when the tests run as root). */
export function ownedDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  if (asRoot()) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim())
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim())
    chownSync(dir, uid, gid)
  }
  return dir
}

function asPostgres(tool: string, args: string[]): [string, string[]] {
  return asRoot() ? ['runuser', ['-u', 'postgres', '--', tool, ...args]] : [tool, args]
}

/** Runs `tool` as the `postgres` user when the tests run as root, resolving with all it said once it exited 0. */
export function runAsPostgres(tool: string, args: string[]): Promise<string> {
  const [command, argv] = asPostgres(tool, args)
  return new Promise((resolve, reject) => {
    const child = spawn(command, argv, { cwd: '/', stdio: ['ignore', 'pipe', 'pipe'] })
    let said = ''
    child.stdout.on('data', (chunk: Buffer) => {
      said += chunk
    })
    child.stderr.on('data', (chunk: Buffer) => {
      said += chunk
    })
    child.on('error', reject)
    child.on('exit', (code) => (code === 0 ? resolve(said) : reject(new Error(`${tool} exited ${code}: ${said}`))))
  })
}

/** Answers once `url` takes a `select 1`, trying for at most `tries` half-seconds. */
async function answering(url: string, tries = 60): Promise<void> {
  for (let attempt = 0; ; attempt += 1) {
    const client = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {} })
    try {
      await client`select 1`
      return
    } catch (error) {
      if (attempt >= tries) throw error
    } finally {
      await client.end({ timeout: 0 })
    }
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
}

/** PgBouncer of a test's own, in transaction mode, in front of the server at `port`. */
export interface Bouncer {
  url: string
  start(): Promise<void>
  /** SIGTERM: every client connection is cut. */
  stop(): Promise<void>
  destroy(): Promise<void>
}

/** Starts PgBouncer 1.18 in transaction mode on a free port; every database name goes to `serverPort`. */
export async function startBouncer(serverPort: number): Promise<Bouncer> {
  const dir = ownedDir('livegate-pgbouncer-')
  const port = await freePort()
  const ini = join(dir, 'pgbouncer.ini')
  writeFileSync(join(dir, 'users.txt'), '"postgres" ""\n')
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=127.0.0.1 port=${serverPort}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      'max_client_conn = 500',
      'default_pool_size = 20',
      'ignore_startup_parameters = extra_float_digits,options',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      '',
    ].join('\n'),
  )
  if (asRoot()) execFileSync('chown', ['-R', 'postgres', dir])
  let child: ChildProcess | undefined
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`
  const bouncer: Bouncer = {
    url,
    async start() {
      const [command, argv] = asPostgres(PGBOUNCER, [ini])
      child = spawn(command, argv, { cwd: '/', stdio: 'ignore' })
      await answering(url)
    },
    async stop() {
      const running = child
      child = undefined
      if (!running || running.exitCode !== null) return
      const exited = new Promise((resolve) => running.once('exit', resolve))
      // runuser passes the signal on to PgBouncer.
      running.kill('SIGTERM')
      await exited
    },
    async destroy() {
      await bouncer.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
  await bouncer.start()
  return bouncer
}

/** The port of a `postgres://host:port/...` URL. */
export const portOf = (url: string) => Number(new URL(url).port)

/** A streaming replica of a test's own, made with `pg_basebackup -R` from a running primary. */
export interface Replica {
  url: string
  start(): Promise<void>
  stop(): Promise<void>
  /** `pg_wal_replay_pause()`: it answers, and falls behind. */
  pause(): Promise<void>
  resume(): Promise<void>
  destroy(): Promise<void>
}

/** Copies the primary at `primaryUrl` with pg_basebackup -R and starts it as a hot standby. */
export async function startReplica(primaryUrl: string): Promise<Replica> {
  const bin = postgresBin()
  if (!bin) throw new Error('no PostgreSQL binaries')
  const dir = ownedDir('livegate-replica-')
  const data = join(dir, 'data')
  const log = join(dir, 'server.log')
  const primary = new URL(primaryUrl)
  await runAsPostgres(join(bin, 'pg_basebackup'), [
    '-h',
    primary.hostname,
    '-p',
    primary.port,
    '-U',
    'postgres',
    '-D',
    data,
    '-R',
    '-X',
    'stream',
  ])
  const port = await freePort()
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200 -c hot_standby=on`
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`
  let running = false
  const sql = (text: string) => {
    const client = postgres(url, { max: 1, onnotice: () => {} })
    return client.unsafe(text).finally(() => client.end({ timeout: 0 }))
  }
  const replica: Replica = {
    url,
    async start() {
      try {
        await runAsPostgres(join(bin, 'pg_ctl'), ['-D', data, '-l', log, '-w', '-o', options, 'start'])
      } catch (error) {
        const tail = existsSync(log) ? readFileSync(log, 'utf8').slice(-2000) : ''
        throw new Error(`${(error as Error).message}\n${tail}`)
      }
      running = true
      await answering(url)
    },
    async stop() {
      await runAsPostgres(join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', '-w', 'stop'])
      running = false
    },
    pause: async () => {
      await sql('select pg_wal_replay_pause()')
    },
    resume: async () => {
      await sql('select pg_wal_replay_resume()')
    },
    async destroy() {
      if (running) await replica.stop().catch(() => {})
      rmSync(dir, { recursive: true, force: true })
    },
  }
  await replica.start()
  return replica
}
