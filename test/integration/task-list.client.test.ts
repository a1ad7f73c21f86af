import { createServer as createHttpServer } from 'node:http'
import { createServer as createTcpServer, type AddressInfo } from 'node:net'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import type { Config, ServiceConfig } from '../../src/config/index.js'
import { generateScenario } from '../../src/simulator/session.scenario.js'
import { SIMULATOR_RETS } from '../../src/simulator/cloud.answers.js'
import { startTaskListServer, type TaskListServer } from '../../src/simulator/task-list.server.js'
import { taskListAt } from '../../src/simulator/task-list.snapshot.js'
import { type TaskListClientOptions, TaskListClient } from '../../src/work/graph/task-list.client.js'
import { UpstreamError } from '../../src/work/upstream.error.js'

const SECRET = 'sekrit-3f9a-task-list'
const scenario = generateScenario({ seed: 21, sessions: 6, serviceCodes: ['TESTING'], rate: 10 })
// The moment of the scenario with the most tasks listed: the answer to expect.
const moment = Array.from({ length: Math.ceil(scenario.durationMs / 10) }, (_, i) => i * 10).reduce((best, at) =>
  taskListAt(scenario, 'TESTING', at).task_list.length > taskListAt(scenario, 'TESTING', best).task_list.length
    ? at
    : best,
)
const expected = { ret: 0, ...taskListAt(scenario, 'TESTING', moment) }

let server: TaskListServer
beforeAll(async () => {
  // A path prefix, as behind a proxy: the client must sign the path with it.
  server = await startTaskListServer({
    services: [{ serviceCode: 'TESTING', secret: SECRET }],
    source: (serviceCode) => taskListAt(scenario, serviceCode, moment),
    pathPrefix: '/cloud',
  })
})
afterAll(() => server.close())
beforeEach(() => server.behave({}))

const upstream = (overrides: Partial<Config['upstream']> = {}): Config['upstream'] => ({
  timeoutMs: 10_000,
  actionTimeoutMs: 10_000,
  retries: 2,
  retryBaseMs: 5,
  pollIntervalMs: 0,
  maxBackoffMs: 60_000,
  ...overrides,
})
const testing = (overrides: Partial<ServiceConfig> = {}): ServiceConfig => ({
  serviceCode: 'TESTING',
  secrets: [SECRET],
  verify: 'enforce',
  baseUrl: server.url,
  ...overrides,
})
const clientFor = (
  services: ServiceConfig[],
  options: Partial<Config['upstream']> = {},
  extra: Partial<TaskListClientOptions> = {},
) => new TaskListClient({ services, options: upstream(options), ...extra })

/** The UpstreamError a call rejects with; fails the test if it resolves or rejects otherwise. */
async function failureOf(call: Promise<unknown>): Promise<UpstreamError> {
  const outcome = await call.then(
    () => new Error('expected a rejection'),
    (error: unknown) => error,
  )
  if (!(outcome instanceof UpstreamError)) throw outcome
  expect(outcome.message).not.toContain(SECRET)
  return outcome
}

/** How many task_list requests the simulator saw while `run` ran. */
async function requestsDuring<T>(run: () => Promise<T>): Promise<{ result: T; requests: number }> {
  const before = server.requests
  const result = await run()
  return { result, requests: server.requests - before }
}

describe('TaskListClient against the simulated task_list', () => {
  it('gets the tasks with a correctly signed request, the base URL path included in the signature', async () => {
    expect(expected.task_list.length).toBeGreaterThan(1)
    expect(new URL(server.url).pathname).toBe('/cloud')
    const { result, requests } = await requestsDuring(() => clientFor([testing()]).get('TESTING'))
    expect(requests).toBe(1)
    expect(result).toEqual(expected)
  })

  it('signs with the first secret', async () => {
    await expect(clientFor([testing({ secrets: [SECRET, 'older'] })]).get('TESTING')).resolves.toEqual(expected)
    const error = await failureOf(clientFor([testing({ secrets: ['older', SECRET] })]).get('TESTING'))
    expect(error).toMatchObject({ kind: 'RET', ret: SIMULATOR_RETS.BAD_SIGNATURE })
  })

  it('reports a wrong secret as RET with the simulator ret, without retrying', async () => {
    const { result: error, requests } = await requestsDuring(() =>
      failureOf(clientFor([testing({ secrets: ['wrong'] })]).get('TESTING')),
    )
    expect(error).toMatchObject({ kind: 'RET', serviceCode: 'TESTING', ret: SIMULATOR_RETS.BAD_SIGNATURE })
    expect(error.status).toBeUndefined()
    expect(requests).toBe(1)
  })

  it('reports a code the simulator does not play as RET UNKNOWN_SERVICE', async () => {
    const error = await failureOf(clientFor([testing({ serviceCode: 'NOBODY' })]).get('NOBODY'))
    expect(error).toMatchObject({ kind: 'RET', ret: SIMULATOR_RETS.UNKNOWN_SERVICE })
  })

  it(
    'refuses an unconfigured code, or one without baseUrl ' + 'or secret, as NOT_CONFIGURED without a request',
    async () => {
      const client = clientFor([
        testing(),
        testing({ serviceCode: 'NOURL', baseUrl: undefined }),
        testing({ serviceCode: 'NOSECRET', secrets: [], verify: 'off' }),
      ])
      const { requests } = await requestsDuring(async () => {
        for (const code of ['UNKNOWN', 'NOURL', 'NOSECRET']) {
          expect(await failureOf(client.get(code))).toMatchObject({ kind: 'NOT_CONFIGURED', serviceCode: code })
        }
      })
      expect(requests).toBe(0)
      expect(client.health('NOURL').lastError).toMatchObject({ kind: 'NOT_CONFIGURED', ret: null })
      expect(client.health('UNKNOWN')).toEqual({ lastSuccessAt: null, lastError: null, lastLatencyMs: null })
    },
  )

  it('gives up with TIMEOUT after exactly retries + 1 attempts', async () => {
    server.behave({ delayMs: 1500 })
    const client = clientFor([testing()], { timeoutMs: 150, retries: 2 })
    const started = performance.now()
    const { result: error, requests } = await requestsDuring(() => failureOf(client.get('TESTING')))
    expect(error.kind).toBe('TIMEOUT')
    expect(requests).toBe(3)
    expect(performance.now() - started).toBeLessThan(1500)
    expect(client.health('TESTING').lastLatencyMs).toBeGreaterThanOrEqual(140)
  })

  it('retries HTTP 500, but neither a non-zero ret nor HTTP 4xx', async () => {
    const client = clientFor([testing()], { retries: 2 })
    server.behave({ status: 500 })
    const http500 = await requestsDuring(() => failureOf(client.get('TESTING')))
    expect(http500.result).toMatchObject({ kind: 'HTTP', status: 500 })
    expect(http500.requests).toBe(3)

    server.behave({ status: 404 })
    const http404 = await requestsDuring(() => failureOf(client.get('TESTING')))
    expect(http404.result).toMatchObject({ kind: 'HTTP', status: 404 })
    expect(http404.requests).toBe(1)

    server.behave({ ret: 50012 })
    const ret = await requestsDuring(() => failureOf(client.get('TESTING')))
    expect(ret.result).toMatchObject({ kind: 'RET', ret: 50012 })
    expect(ret.requests).toBe(1)
  })

  it('recovers when a retry succeeds', async () => {
    server.behave({ status: 503 })
    const client = clientFor([testing()], { retries: 2, retryBaseMs: 100 })
    const pending = client.get('TESTING')
    // The first attempt fails; the service is back before the retry.
    await new Promise((resolve) => setTimeout(resolve, 50))
    server.behave({})
    await expect(pending).resolves.toEqual(expected)
  })

  it('shares one request among 10 concurrent calls', async () => {
    server.behave({ delayMs: 50 })
    const client = clientFor([testing()])
    const { result, requests } = await requestsDuring(() =>
      Promise.all(Array.from({ length: 10 }, () => client.get('TESTING'))),
    )
    expect(requests).toBe(1)
    expect(new Set(result).size).toBe(1)
    expect(result[0]).toEqual(expected)
    // Without a cache, the next call asks again.
    expect((await requestsDuring(() => client.get('TESTING'))).requests).toBe(1)
  })

  it('keeps health: the last success, the last error and the last latency', async () => {
    const client = clientFor([testing()], { retries: 0 })
    expect(client.health('TESTING')).toEqual({ lastSuccessAt: null, lastError: null, lastLatencyMs: null })
    const before = Date.now()
    await client.get('TESTING')
    const ok = client.health('TESTING')
    expect(ok.lastSuccessAt?.getTime()).toBeGreaterThanOrEqual(before)
    expect(ok.lastError).toBeNull()
    expect(ok.lastLatencyMs).toBeTypeOf('number')

    server.behave({ ret: SIMULATOR_RETS.BAD_SIGNATURE })
    await failureOf(client.get('TESTING'))
    const failed = client.health('TESTING')
    expect(failed.lastSuccessAt).toEqual(ok.lastSuccessAt)
    expect(failed.lastError).toMatchObject({
      kind: 'RET',
      ret: SIMULATOR_RETS.BAD_SIGNATURE,
      message: expect.stringContaining('TESTING'),
    })
    expect(failed.lastError?.at).toBeInstanceOf(Date)

    server.behave({ status: 500 })
    await failureOf(client.get('TESTING'))
    expect(client.health('TESTING').lastError).toMatchObject({ kind: 'HTTP', ret: null })
  })

  it('reports a refused connection as NETWORK, after its retries', async () => {
    const port = await closedPort()
    const client = clientFor([testing({ baseUrl: `http://127.0.0.1:${port}` })], { retries: 1 })
    const error = await failureOf(client.get('TESTING'))
    expect(error.kind).toBe('NETWORK')
    expect(error.message).toContain('ECONNREFUSED')
    expect(client.health('TESTING').lastError).toMatchObject({ kind: 'NETWORK' })
  })

  it('reports a 200 answer that is not a task_list answer as INVALID_ANSWER, without retrying', async () => {
    let requests = 0
    const odd = createHttpServer((_request, response) => {
      requests++
      response.setHeader('content-type', 'application/json')
      response.end(requests === 1 ? '{"ret":0,"task_list":[{"serial":1}]}' : 'not json')
    })
    await new Promise<void>((resolve) => odd.listen(0, '127.0.0.1', resolve))
    try {
      const client = clientFor([testing({ baseUrl: `http://127.0.0.1:${(odd.address() as AddressInfo).port}` })])
      expect(await failureOf(client.get('TESTING'))).toMatchObject({
        kind: 'INVALID_ANSWER',
        message: expect.stringContaining('task_list.0.id'),
      })
      expect(await failureOf(client.get('TESTING'))).toMatchObject({
        kind: 'INVALID_ANSWER',
        message: expect.stringContaining('not JSON'),
      })
      expect(requests).toBe(2)
    } finally {
      await new Promise((resolve) => odd.close(resolve))
    }
  })
})

/** A port nothing listens on: taken from the system, then let go. */
async function closedPort(): Promise<number> {
  const probe = createTcpServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as AddressInfo
  await new Promise((resolve) => probe.close(resolve))
  return port
}
