import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { type AddressInfo, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { send } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'
import { LIVEGATE_COMMAND, ROOT, startServeProcess } from '../support/livegate.process.js'
import { subscribe } from '../support/subscription.client.js'

const root = ROOT
const livegate = LIVEGATE_COMMAND
const dir = mkdtempSync(join(tmpdir(), 'livegate-cli-'))
const configFile = join(dir, 'livegate.json')
writeFileSync(
  configFile,
  JSON.stringify({ port: 0, services: [{ serviceCode: 'TESTING', secrets: [{ env: 'TESTING_SECRET' }] }] }),
)
const env = { ...process.env, TESTING_SECRET: 'abc', LIVEGATE_DATA_DIR: 'memory://', LOG_LEVEL: 'info' }

/** Runs a livegate command to its end. */
const runLivegate = (args: string[], extraEnv: Record<string, string> = {}) =>
  promisify(execFile)(process.execPath, [...livegate, ...args], { cwd: root, env: { ...env, ...extraEnv } }).then(
    (result) => ({ code: 0, ...result }),
    (error: { code: number; stdout: string; stderr: string }) => ({
      code: error.code,
      stdout: error.stdout,
      stderr: error.stderr,
    }),
  )

describe('the livegate command, as a real process on the embedded database', () => {
  let server: ChildProcess
  let url = ''
  let output = () => ''

  beforeAll(async () => {
    const serve = await startServeProcess(['--config', configFile], env)
    server = serve.process
    url = serve.url
    output = serve.output
  }, 300_000)

  afterAll(() => {
    server.kill('SIGKILL')
  })

  it('says where it listens, which database, and the callback address to give the service', async () => {
    await expect.poll(output).toContain(`${url}/callbacks`)
    expect(output()).toContain('embedded PGlite in memory')
    expect(output()).not.toContain('abc"')
  })

  it('accepts the callback that `livegate sign` prints', async () => {
    const signed = await runLivegate([
      'sign',
      '--config',
      configFile,
      '--url',
      `${url}/callbacks`,
      'type=0',
      'hashed_id=cli-task',
      'author=alice',
    ])
    expect(signed.code, signed.stderr).toBe(0)
    const line = signed.stdout.trim()
    expect(line).toMatch(/^curl -sS -X POST '/)
    // Read the curl line back into a request rather than depend on curl being installed.
    const headers = Object.fromEntries(
      [...line.matchAll(/-H '([^:]+): ([^']*)'/g)].map((m) => [m[1] as string, m[2] as string]),
    )
    const body = /--data-raw '([^']*)'/.exec(line)?.[1]
    const answer = await send({ method: 'POST', url: `${url}/callbacks`, headers, body: body as string })
    expect(answer.status, answer.text).toBe(200)
    expect(answer.text).toBe('{"ret":0}')
  })

  it('on SIGTERM closes subscriber sockets with 1001 (going away) and exits 0', async () => {
    const subscriber = subscribe(url, 'subscription { notificationReceived { id } }')
    await expect
      .poll(
        async () => {
          const signed = await runLivegate([
            'sign',
            '--config',
            configFile,
            '--url',
            `${url}/callbacks`,
            'type=15',
            'hashed_id=probe',
            'status=0',
            `seq=${Date.now()}`,
          ])
          const headers = Object.fromEntries(
            [...signed.stdout.matchAll(/-H '([^:]+): ([^']*)'/g)].map((m) => [m[1] as string, m[2] as string]),
          )
          await send({
            method: 'POST',
            url: `${url}/callbacks`,
            headers,
            body: /--data-raw '([^']*)'/.exec(signed.stdout)?.[1] as string,
          })
          return subscriber.events.length
        },
        { timeout: 120_000, interval: 500 },
      )
      .toBeGreaterThan(0)
    const exited = new Promise<number | null>((resolve) => server.on('exit', (code) => resolve(code)))
    server.kill('SIGTERM')
    expect(await subscriber.closed).toBe(1001)
    expect(await exited).toBe(0)
    await subscriber.dispose()
  }, 300_000)

  it('refuses a bad config file with one message naming the key, and exits non-zero', async () => {
    const bad = join(dir, 'bad.json')
    writeFileSync(bad, JSON.stringify({ services: [{ serviceCode: 'TESTING', secrets: ['x'], verify: 'sometimes' }] }))
    const result = await runLivegate(['serve', '--config', bad])
    expect(result.code).toBe(1)
    expect(result.stderr.trim()).toMatch(/^livegate: config file .*bad\.json: services\[0\]\.verify: /)
    expect(result.stderr.trim().split('\n')).toHaveLength(1)
  })

  it('`livegate demo` shows folded live tasks with outputs and streams within seconds', async () => {
    const probe = createServer().listen(0, '127.0.0.1')
    await once(probe, 'listening')
    const simulatorPort = (probe.address() as AddressInfo).port
    probe.close()
    const demo = spawn(
      process.execPath,
      [...livegate, 'demo', '--port', '0', '--simulator-port', String(simulatorPort), '--rate', '20'],
      { cwd: root, env },
    )
    try {
      let printed = ''
      demo.stdout?.on('data', (chunk: Buffer) => {
        printed += chunk
      })
      // A limit against a hang: on a busy machine the demo itself takes long to start.
      const deadline = Date.now() + 240_000
      let gatewayUrl: string | undefined
      let live: { outputs: Array<{ streams: unknown[] }> } | undefined
      while (!live && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250))
        gatewayUrl ??= /the gateway is at (http:\/\/\S+),/.exec(printed)?.[1]
        if (!gatewayUrl) continue
        const answer = await graphql(
          { url: gatewayUrl },
          '{ tasks(filter: { status: [LIVE] }) { edges { node { id outputs { tag streams { kind } } } } } }',
        ).catch(() => undefined)
        live = answer?.data?.tasks.edges
          .map((e: { node: typeof live }) => e.node)
          .find((task: NonNullable<typeof live>) => task.outputs.some((o) => o.streams.length > 0))
      }
      expect(live, printed).toBeDefined()
      const exited = once(demo, 'exit')
      demo.kill('SIGTERM')
      expect((await exited)[0]).toBe(0)
    } finally {
      demo.kill('SIGKILL')
    }
  }, 300_000)

  it('`livegate demo` refuses a profile it does not have, naming the two it has', async () => {
    const result = await runLivegate(['demo', '--profile', 'week', '--port', '0'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('[--profile day|burst]')
  })

  it('prints its usage for an unknown command', async () => {
    const result = await runLivegate(['launch'])
    expect(result.code).toBe(2)
    expect(result.stderr).toContain('usage: livegate <command>')
  })
})
