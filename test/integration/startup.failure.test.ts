import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { type AddressInfo, createConnection, createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { serverUrl, itOnServer } from '../support/database.fixture.js'
import { LIVEGATE_COMMAND, ROOT, startServeProcess } from '../support/livegate.process.js'
import { freePort } from '../support/free.port.js'

const scratch = mkdtempSync(join(tmpdir(), 'livegate-startup-'))
// One embedded data directory for the lock tests: initdb runs once.
const sharedDataDir = join(scratch, 'pglite-data')
// Without npm's own variables, so a test of the npm slip is the only one that looks like npm.
const baseEnv = Object.fromEntries(
  Object.entries(process.env).filter(([name]) => !name.startsWith('npm_')),
) as NodeJS.ProcessEnv

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs a livegate command to its end: the process has exited when this resolves. */
function livegate(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...LIVEGATE_COMMAND, ...args],
      { cwd: ROOT, env: { ...baseEnv, LOG_LEVEL: 'info', ...env } },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0
        resolve({ code, stdout, stderr })
      },
    )
  })
}

const lines = (text: string) => text.split('\n').filter((line) => line.trim() !== '')

async function listening(server: Server): Promise<number> {
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return (server.address() as AddressInfo).port
}

/**
 * Just enough of a PostgreSQL server to refuse a password: it asks for one in clear text and
 * answers whatever comes with FATAL 28P01, as a server with md5 or scram auth would.
 */
function passwordRefusingServer(): Server {
  return createServer((socket: Socket) => {
    let stage = 0
    socket.on('data', () => {
      if (stage++ === 0) {
        socket.write(Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 3]))
        return
      }
      const fields = Buffer.from('SFATAL\0VFATAL\0C28P01\0Mpassword authentication failed for user "livegate"\0\0')
      const head = Buffer.alloc(5)
      head.write('E')
      head.writeInt32BE(fields.length + 4, 1)
      socket.end(Buffer.concat([head, fields]))
    })
    socket.on('error', () => {})
  })
}

// Limits against a hang only: on a machine at load 35, one start of a process through tsx took 50 s.
const PROCESS_LIMIT_MS = 600_000

describe('a start-up that cannot succeed exits non-zero at once with one line, leaving nothing behind', {
  timeout: PROCESS_LIMIT_MS,
}, () => {
  const servers: Server[] = []
  afterAll(async () => {
    for (const server of servers) server.close()
  })

  it('a busy port: named, with what to do, before the data directory is touched', async () => {
    const holder = createServer()
    servers.push(holder)
    const port = await listening(holder)
    const dataDir = join(scratch, 'busy-port-data')
    const run = await livegate(['serve'], { PORT: String(port), LIVEGATE_DATA_DIR: dataDir })
    expect(run.code, run.stderr).toBe(1)
    expect(lines(run.stderr)).toEqual([
      `livegate: port ${port} on 127.0.0.1 is already in use (EADDRINUSE): stop the process that holds it, or ` +
        `choose another port (PORT=${port + 1}, or "port" in the config file)`,
    ])
    expect(existsSync(dataDir)).toBe(false)
  })

  it('--port wins over PORT, for serve and demo alike; a bad one is refused with the usage', async () => {
    const holder = createServer()
    servers.push(holder)
    const port = await listening(holder)
    const other = String(await freePort())
    const [serve, demo, bad] = await Promise.all([
      livegate(['serve', '--port', String(port)], { PORT: other, LIVEGATE_DATA_DIR: 'memory://' }),
      livegate(['demo', '--port', String(port), '--simulator-port', String(await freePort())], { PORT: other }),
      livegate(['serve', '--port', 'http'], { LIVEGATE_DATA_DIR: 'memory://' }),
    ])
    for (const run of [serve, demo]) {
      expect(run.code, run.stderr).toBe(1)
      expect(run.stderr).toContain(`livegate: port ${port} on 127.0.0.1 is already in use (EADDRINUSE)`)
    }
    expect(bad.code).toBe(2)
    expect(lines(bad.stderr)[0]).toBe('livegate serve: --port: "http" is not a port number from 0 to 65535')
  })

  it('a refused database: the cause, the host and port, and where the URL came from', async () => {
    const port = await freePort()
    const run = await livegate(['serve'], {
      PORT: '0',
      DATABASE_URL: `postgres://livegate:hunter22@127.0.0.1:${port}/livegate`,
    })
    expect(run.code, run.stderr).toBe(1)
    expect(lines(run.stderr)).toEqual([
      `livegate: database server at 127.0.0.1:${port} refused the connection (ECONNREFUSED): is PostgreSQL ` +
        `running and listening there? (the URL is from environment DATABASE_URL)`,
    ])
    expect(run.stderr + run.stdout).not.toContain('hunter22')
  })

  it('an unknown database host, named from the config file', async () => {
    const configFile = join(scratch, 'unknown-host.json')
    writeFileSync(
      configFile,
      JSON.stringify({ port: 0, database: { url: 'postgres://livegate@no-such-host.invalid:5432/livegate' } }),
    )
    const run = await livegate(['serve', '--config', configFile])
    expect(run.code, run.stderr).toBe(1)
    expect(lines(run.stderr)).toHaveLength(1)
    expect(run.stderr).toMatch(
      /^livegate: database host "no-such-host\.invalid" cannot be resolved \((ENOTFOUND|EAI_AGAIN)\): check the host name in the URL/,
    )
    expect(run.stderr).toContain(`(the URL is from config file ${configFile}: database.url)`)
  })

  it('a wrong password: authentication failed, never the password', async () => {
    const fake = passwordRefusingServer()
    servers.push(fake)
    const port = await listening(fake)
    const run = await livegate(['migrate'], {
      DATABASE_URL: `postgres://livegate:not-the-password@127.0.0.1:${port}/livegate`,
    })
    expect(run.code, run.stderr).toBe(1)
    expect(lines(run.stderr)).toEqual([
      `livegate: database server at 127.0.0.1:${port} refused user "livegate": password authentication failed ` +
        `(28P01): check the password in the URL (the URL is from environment DATABASE_URL)`,
    ])
    expect(run.stderr).not.toContain('not-the-password')
  })

  itOnServer('a database that does not exist on the server', async () => {
    const url = new URL(serverUrl as string)
    url.pathname = '/livegate_no_such_database'
    const run = await livegate(['migrate'], { DATABASE_URL: url.href })
    expect(run.code, run.stderr).toBe(1)
    expect(lines(run.stderr)).toEqual([
      `livegate: database "livegate_no_such_database" does not exist on the server at ${url.hostname}:${url.port}` +
        ` (3D000): create it (createdb livegate_no_such_database) or fix the URL (the URL is from environment ` +
        `DATABASE_URL)`,
    ])
  })

  it('a lock left by a process that is gone is taken over, and released at exit', async () => {
    const dataDir = sharedDataDir
    const gone = await livegate(['migrate'], { LIVEGATE_DATA_DIR: dataDir })
    expect(gone.code, gone.stderr).toBe(0)
    // A pid above the kernel's pid_max belongs to no process.
    writeFileSync(
      join(dataDir, 'livegate.lock'),
      `${JSON.stringify({ pid: 4_194_305, host: (await import('node:os')).hostname(), command: 'serve', since: 'then', token: 'old' })}` +
        `\n`,
    )
    const run = await livegate(['migrate'], { LIVEGATE_DATA_DIR: dataDir })
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain('database migrated (pglite)')
    expect(readdirSync(dataDir).filter((name) => name.startsWith('livegate.lock'))).toEqual([])
  })

  it(
    'a second process on one data directory is refused, ' + 'naming the holder; the lock goes with the holder',
    async () => {
      // The directory the test before initialised: a restart, much quicker than a first start.
      const dataDir = sharedDataDir
      const env = { ...baseEnv, PORT: '0', LIVEGATE_DATA_DIR: dataDir, LOG_LEVEL: 'info' }
      const first = await startServeProcess([], env)
      try {
        const pid = first.process.pid as number
        for (const args of [['serve'], ['migrate']]) {
          const run = await livegate(args, { PORT: '0', LIVEGATE_DATA_DIR: dataDir })
          expect(run.code, run.stderr).toBe(1)
          expect(lines(run.stderr)).toHaveLength(1)
          expect(run.stderr).toMatch(
            new RegExp(
              `^livegate: data directory ${dataDir} is in use by livegate serve \\(pid ${pid}, since [^)]+\\): ` +
                `stop it first`,
            ),
          )
        }
        const exited = once(first.process, 'exit')
        first.process.kill('SIGTERM')
        expect((await exited)[0]).toBe(0)
        expect(readdirSync(dataDir)).not.toContain('livegate.lock')
      } finally {
        first.process.kill('SIGKILL')
      }
    },
  )

  it('an unknown option is an error with the short usage, not ignored', async () => {
    const run = await livegate(['serve', '--confg', 'livegate.json'], { LIVEGATE_DATA_DIR: 'memory://' })
    expect(run.code).toBe(2)
    expect(lines(run.stderr)).toEqual([
      "livegate serve: unknown option '--confg'",
      'usage: livegate serve [--config file.json] [--port N] [--workers N]',
      '  start the gateway (migrates the database first)',
    ])
  })

  it('`npm start --config x.json` (npm took the option) says how to write it', async () => {
    // What npm 10 leaves behind: its lifecycle event, and the option in its own environment.
    const run = await livegate(['serve'], {
      npm_lifecycle_event: 'start',
      npm_config_config: 'livegate.json',
      LIVEGATE_DATA_DIR: 'memory://',
    })
    expect(run.code).toBe(2)
    expect(lines(run.stderr)).toEqual([
      'livegate: npm took --config for itself, so livegate never saw it: write the options after --, as in: npm ' +
        'start -- --config livegate.json',
    ])
    // npm 11 keeps `true` and hands the value on as a stray argument.
    const eleven = await livegate(['serve', 'livegate.json'], {
      npm_lifecycle_event: 'start',
      npm_config_config: 'true',
      LIVEGATE_DATA_DIR: 'memory://',
    })
    expect(eleven.code).toBe(2)
    expect(lines(eleven.stderr)).toEqual([
      'livegate: npm took --config for itself, so livegate never saw it: write the options after --, as in: npm ' +
        'start -- --config livegate.json',
    ])
  })

  it('--help for every command: usage, options, environment, an example', async () => {
    const commands = ['serve', 'migrate', 'demo', 'schema', 'sign', 'simulate']
    const runs = await Promise.all(commands.map((command) => livegate([command, '--help'])))
    for (const [index, command] of commands.entries()) {
      const stdout = runs[index]?.stdout ?? ''
      expect(runs[index]?.code, command).toBe(0)
      expect(stdout, command).toMatch(new RegExp(`^usage: livegate ${command} \\[--config file\\.json\\]`))
      expect(stdout, command).toMatch(/\noptions:\n {2}\S/)
      expect(stdout, command).toMatch(new RegExp(`\\nexample:\\n {2}(eval "\\$\\()?(\\S+=\\S+ )?livegate ${command}`))
      if (command !== 'schema') expect(stdout, command).toMatch(/\nenvironment:\n {2}[A-Z_]+ /)
    }
    // serve and demo state the one rule for the port.
    for (const index of [0, 2])
      expect(runs[index]?.stdout).toContain('The port is --port, else PORT, else "port" in the config file, else 4000.')
  })

  it('--version names the version of package.json', async () => {
    const run = await livegate(['--version'])
    expect(run.code).toBe(0)
    expect(run.stdout.trim()).toMatch(/^livegate \d+\.\d+\.\d+/)
    expect(run.stdout.trim()).toBe(`livegate ${JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version}`)
  })
})

describe('a start that succeeds is not held up by who knocks', { timeout: PROCESS_LIMIT_MS }, () => {
  it('a health check connecting while the gateway starts does not stall the start', async () => {
    const port = await freePort()
    const knocks: Socket[] = []
    let knocking = true
    // What a load balancer does: connect, ask, and wait for an answer, again and again.
    const knock = async () => {
      while (knocking) {
        const socket = createConnection({ port, host: '127.0.0.1' }, () =>
          socket.write('GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n'),
        )
        socket.on('error', () => {})
        knocks.push(socket)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    }
    const knocking$ = knock()
    const started = await startServeProcess([], {
      ...baseEnv,
      PORT: String(port),
      LIVEGATE_DATA_DIR: sharedDataDir,
      LOG_LEVEL: 'info',
    })
    try {
      knocking = false
      await knocking$
      expect((await fetch(`${started.url}/healthz`)).status).toBe(200)
    } finally {
      for (const socket of knocks) socket.destroy()
      const exited = once(started.process, 'exit')
      started.process.kill('SIGTERM')
      await exited
    }
  })
})
