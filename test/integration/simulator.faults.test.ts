import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Config, ServiceConfig } from '../../src/config/index.js'
import { UpstreamError } from '../../src/work/upstream.error.js'
import { faultsOf, listFaultAt } from '../../src/simulator/fault.plan.js'
import { generateScenario } from '../../src/simulator/session.scenario.js'
import { startSimulator } from '../../src/simulator/simulator.run.js'
import { startTaskListServer, type TaskListServer } from '../../src/simulator/task-list.server.js'
import { taskListAt } from '../../src/simulator/task-list.snapshot.js'
import { TaskListClient } from '../../src/work/graph/task-list.client.js'

// The service faults the simulator plays, over real HTTP and read by livegate's own task_list
// client: while a code's list is stale it answers 503 or hangs, and an audience drop lists the
// code's tasks watched by nobody. The scenario's clock is the test's, so each moment is chosen.

const SECRET = 'sekrit-faults'
const options = { seed: 4, sessions: 24, serviceCodes: ['A', 'B'], rate: 4, epochMs: 0, audience: true }
const scenario = generateScenario({ ...options, serviceFaults: 2 })
const faults = faultsOf(scenario)
const stale = faults.filter((fault) => fault.kind === 'stale-list' && fault.serviceCode === 'A')
const [drop] = faults.filter((fault) => fault.kind === 'audience-drop' && fault.serviceCode === 'A')
const timeouts = { timeoutMs: 300, actionTimeoutMs: 300 }
const upstream: Config['upstream'] = { ...timeouts, retries: 0, retryBaseMs: 5, pollIntervalMs: 0, maxBackoffMs: 1000 }

describe('the simulator’s service faults over HTTP', () => {
  let server: TaskListServer
  let client: TaskListClient
  let at = 0

  beforeAll(async () => {
    server = await startTaskListServer({
      services: [{ serviceCode: 'A', secret: SECRET }],
      source: (code) => taskListAt(scenario, code, at),
      planned: (code) => listFaultAt(scenario, code, at),
    })
    const service: ServiceConfig = { serviceCode: 'A', secrets: [SECRET], verify: 'enforce', baseUrl: server.url }
    client = new TaskListClient({ services: [service], options: upstream })
  })
  afterAll(() => server?.close())

  const failure = (call: Promise<unknown>) =>
    call.then(
      () => new Error('expected a failure'),
      (error: unknown) => error,
    )

  it('a stale list answers HTTP 503, or hangs past the client’s timeout, over its window only', async () => {
    const modes = stale.map((fault) => listFaultAt(scenario, 'A', fault.fromMs))
    expect(modes.some((mode) => mode?.status === 503) && modes.some((mode) => mode?.delayMs !== undefined)).toBe(true)
    for (const fault of stale) {
      at = fault.fromMs
      const error = await failure(client.get('A'))
      expect(error).toBeInstanceOf(UpstreamError)
      const hangs = listFaultAt(scenario, 'A', at)?.delayMs !== undefined
      expect(error).toMatchObject(hangs ? { kind: 'TIMEOUT' } : { kind: 'HTTP', status: 503 })
      at = fault.untilMs as number
      await expect(client.get('A')).resolves.toEqual({ ret: 0, ...taskListAt(scenario, 'A', at) })
    }
  })

  it('an audience drop lists the code’s tasks with no viewers', async () => {
    at = ((drop?.fromMs as number) + (drop?.untilMs as number)) / 2
    const answer = await client.get('A')
    expect(answer.task_list.length).toBeGreaterThan(0)
    const outputs = answer.task_list.flatMap((task) => task.outputs)
    expect(outputs.map((output) => output.http_connections_num ?? 0)).toEqual(outputs.map(() => 0))
  })

  it('a running simulator tells its faults, with the time its scenario started', async () => {
    const services = [{ serviceCode: 'A', secret: SECRET }]
    const simulator = await startSimulator({ services, seed: 4, sessions: 8, rate: 4, serviceFaults: 1 })
    try {
      const told = simulator.faults()
      expect(told.startedAtMs).toBeLessThanOrEqual(Date.now())
      expect(told.faults).toEqual(faultsOf(simulator.scenario()))
      const ofTheCode = told.faults.filter((fault) => fault.taskId === null)
      expect(ofTheCode.map((fault) => fault.kind)).toEqual(['audience-drop', 'stale-list'])
    } finally {
      await simulator.stop()
    }
  })
})
