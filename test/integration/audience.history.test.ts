import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSimulator, type Simulator } from '../../src/simulator/simulator.run.js'
import { generateScenario, type Scenario } from '../../src/simulator/session.scenario.js'
import type { SimulatedTaskList } from '../../src/simulator/task-list.snapshot.js'
import { driverName, openTestDatabase, serverUrl, type TestDatabase } from '../support/database.fixture.js'
import { graphql } from '../support/graphql.client.js'
import { type ServeProcess, startServeProcess } from '../support/livegate.process.js'
import { scrapeMetrics } from '../support/metrics.scrape.js'
import { scratchDirs } from '../support/scratch.dir.js'
import { type Subscribed, subscribe } from '../support/subscription.client.js'
import { freePort } from '../support/free.port.js'

const SECRET = 'abc'
const CODES = ['ONE', 'TWO']
// Slow enough that the stall spans several polls on a busy machine.
const PLAY = { seed: 1717, sessions: 8, rate: 3 }
const KEYS = { one: 'key-of-one', all: 'key-of-all' }
const asOne = { headers: { authorization: `Bearer ${KEYS.one}` } }
const asAll = { headers: { authorization: `Bearer ${KEYS.all}` } }

interface Seen {
  viewers: number
  inputBytes: number
  outputBytes: number
}

const TASK_SERIES = `query($id: ID!, $from: DateTime, $to: DateTime) { task(id: $id) {
  taskId status viewers peakViewers missingCallbacks health { state since reason }
  metrics(step: RAW, from: $from, to: $to) { at samples viewers viewersMax inputBitrate outputBitrate }
  minutes: metrics(step: MINUTE, from: $from, to: $to) { at samples viewers viewersMax inputBitrate }
} }`

const scratch = scratchDirs('livegate-history-')

// The gateway is `livegate serve`, a process of its own as deployed; the simulator plays the
// cloud over real HTTP, both ways, and tells the test every answer it gave.
describe(`samples, rollups, health and reconciliation: livegate serve against the simulator, on ${driverName}`, () => {
  let db: TestDatabase | undefined
  let serve: ServeProcess
  let gateway: { url: string }
  let simulator: Simulator
  let planned: Scenario
  const answers = new Map<string, Seen[]>()
  let healthEvents: Subscribed<{ taskChanged: { taskId: string; health: { state: string } } }>
  let sampledAsOne: Subscribed<{
    metricsSampled: { at: string; viewers: number; task: { taskId: string; serviceCode: string } }
  }>
  const startedAt = new Date()

  beforeAll(async () => {
    // On the server, a database of the test's own the process opens; PGlite is the process's own.
    db = serverUrl ? await openTestDatabase() : undefined
    const port = await freePort()
    const configFile = join(scratch(), 'livegate.json')
    writeFileSync(
      configFile,
      JSON.stringify({
        port: 0,
        services: CODES.map((serviceCode) => ({ serviceCode, secrets: [SECRET], baseUrl: `http://127.0.0.1:${port}` })),
        apiKeys: [
          { name: 'one', key: KEYS.one, serviceCodes: ['ONE'] },
          { name: 'all', key: KEYS.all, serviceCodes: ['*'] },
        ],
        // The simulator starts after the gateway: the polls before it fail, and a backoff grown past a short task's
        // life would list it 0 times. Looking again within a second keeps every task seen.
        upstream: { pollIntervalMs: 250, timeoutMs: 2000, maxBackoffMs: 1000 },
        // Generous: on a busy machine a callback may take seconds to be folded.
        reconcile: { graceMs: 12_000 },
      }),
    )
    const database = db?.url ? { DATABASE_URL: db.url } : { DATABASE_URL: '', LIVEGATE_DATA_DIR: 'memory://' }
    serve = await startServeProcess(['--config', configFile], { ...process.env, ...database, LOG_LEVEL: 'info' })
    gateway = { url: serve.url }
    planned = generateScenario({ ...PLAY, serviceCodes: CODES, audience: true })
    const stalled = planned.sessions.find((s) => s.audience?.stall)
    healthEvents = subscribe(
      gateway.url,
      'subscription($ids: [String!]) { taskChanged(filter: { taskIds: $ids }) { taskId health { state } } }',
      { ids: [stalled?.taskId] },
      { authorization: `Bearer ${KEYS.all}` },
    )
    sampledAsOne = subscribe(
      gateway.url,
      'subscription { metricsSampled { at viewers task { taskId serviceCode } } }',
      {},
      { authorization: `Bearer ${KEYS.one}` },
    )
    await new Promise((resolve) => setTimeout(resolve, 300))
    simulator = await startSimulator({
      port,
      services: CODES.map((serviceCode) => ({ serviceCode, secret: SECRET })),
      gatewayUrl: gateway.url,
      ...PLAY,
      onTaskList: (_code: string, answer: SimulatedTaskList) => {
        for (const task of answer.task_list) {
          const seen = answers.get(task.id) ?? []
          const sum = (values: number[]) => values.reduce((a, b) => a + b, 0)
          seen.push({
            viewers: sum(task.outputs.map((o) => o.http_connections_num)),
            inputBytes: task.input_bytes,
            outputBytes: sum(task.outputs.map((o) => o.http_output_bytes)),
          })
          answers.set(task.id, seen)
        }
      },
    })
    await simulator.done
  }, 600_000)

  afterAll(async () => {
    await healthEvents?.dispose()
    await sampledAsOne?.dispose()
    await simulator?.stop()
    if (serve && serve.process.exitCode === null) {
      const exited = new Promise((resolve) => serve.process.once('exit', resolve))
      serve.process.kill('SIGTERM')
      await exited
    }
    await db?.drop()
  })

  const window = () => ({
    from: new Date(startedAt.getTime() - 60_000).toISOString(),
    to: new Date(Date.now() + 60_000).toISOString(),
  })
  const taskGlobalId = (serviceCode: string, taskId: string) =>
    Buffer.from(`Task:${JSON.stringify([serviceCode, taskId])}`).toString('base64url')

  it('keeps a sample of every answer that listed a task: viewers as the cloud reported them, bitrates from the byte ' +
    'deltas, none negative', async () => {
    expect(planned.sessions.map((s) => s.taskId)).toEqual(simulator.scenario().sessions.map((s) => s.taskId))
    expect(planned.sessions.some((s) => (s.audience?.peak ?? 0) >= 1000)).toBe(true)
    for (const session of simulator.scenario().sessions) {
      const reported = answers.get(session.taskId) ?? []
      expect(reported.length, `${session.taskId} was listed`).toBeGreaterThan(2)
      // Every answer the simulator made is folded once the gateway is done with it.
      let series: Array<{
        at: string
        viewers: number
        inputBitrate: number | null
        outputBitrate: number | null
        samples: number
      }> = []
      await expect
        .poll(
          async () => {
            const answer = await graphql(
              gateway,
              TASK_SERIES,
              { id: taskGlobalId(session.serviceCode, session.taskId), ...window() },
              asAll,
            )
            series = answer.data?.task?.metrics ?? []
            return series.length
          },
          { timeout: 60_000, interval: 250 },
        )
        .toBe(reported.length)
      expect(series.map((point) => point.viewers)).toEqual(reported.map((seen) => seen.viewers))
      for (let k = 0; k < series.length; k++) {
        const point = series[k] as (typeof series)[number]
        expect(point.samples).toBe(1)
        if (point.inputBitrate !== null) expect(point.inputBitrate).toBeGreaterThanOrEqual(0)
        if (point.outputBitrate !== null) expect(point.outputBitrate).toBeGreaterThanOrEqual(0)
        const before = reported[k - 1]
        const now = reported[k] as Seen
        if (k === 0 || !before) {
          expect(point.inputBitrate).toBeNull()
          continue
        }
        const seconds = (Date.parse(point.at) - Date.parse((series[k - 1] as typeof point).at)) / 1000
        const rate = (b: number, a: number) => (a >= b ? ((a - b) * 8) / seconds : null)
        const input = rate(before.inputBytes, now.inputBytes)
        const output = rate(before.outputBytes, now.outputBytes)
        if (input === null) expect(point.inputBitrate).toBeNull()
        else expect(point.inputBitrate).toBeCloseTo(input, 3)
        if (output === null) expect(point.outputBitrate).toBeNull()
        else expect(point.outputBitrate).toBeCloseTo(output, 3)
      }
      // The reset: the step across it has no rate, and none is negative.
      if (session.audience?.resetAtMs !== null && session.audience?.resetAtMs !== undefined) {
        const down = reported.findIndex((seen, k) => k > 0 && seen.inputBytes < (reported[k - 1] as Seen).inputBytes)
        expect(down).toBeGreaterThan(0)
        expect(series[down]?.inputBitrate).toBeNull()
      }
    }
  }, 300_000)

  it('turns the stalled input STARVING and back to HEALTHY, pushed on taskChanged', async () => {
    const states = healthEvents.events.map((event) => event.taskChanged.health.state)
    const starving = states.indexOf('STARVING')
    expect(starving, states.join()).toBeGreaterThanOrEqual(0)
    expect(states.slice(starving + 1), states.join()).toContain('HEALTHY')
    // The scenario is over: every task ends, once the gateway has folded the last of it.
    const endedStates = async () => {
      const answer = await graphql(
        gateway,
        '{ tasks(first: 50) { edges { node { taskId health { state reason } } } } }',
        {},
        asAll,
      )
      expect(answer.errors).toBeUndefined()
      return [
        ...new Set(
          answer.data.tasks.edges.map((edge: { node: { health: { state: string } } }) => edge.node.health.state),
        ),
      ]
    }
    await expect.poll(endedStates, { timeout: 60_000 }).toEqual(['ENDED'])
  })

  it('finds the start the cloud forgot, once, as data, in Prometheus and on the task', async () => {
    const forgetful = planned.sessions.find((s) => s.audience?.forgetsStart)
    if (!forgetful) throw new Error('the scenario has no forgotten start')
    await expect
      .poll(
        async () =>
          (
            await graphql(
              gateway,
              TASK_SERIES,
              { id: taskGlobalId(forgetful.serviceCode, forgetful.taskId), ...window() },
              asAll,
            )
          ).data?.task?.missingCallbacks,
        { timeout: 60_000 },
      )
      .toContain('LIVE_START')
    const query =
      'query($code: String!) { upstream(serviceCode: $code) { callbacks { missingStart missingEnd delayP50Ms ' +
      'delayP99Ms } } }'
    const reconciled = (await graphql(gateway, query, { code: forgetful.serviceCode }, asAll)).data.upstream.callbacks
    const all = await graphql(
      gateway,
      '{ tasks(first: 50) { edges { node { taskId serviceCode missingCallbacks } } } }',
      {},
      asAll,
    )
    const flagged = all.data.tasks.edges
      .filter((e: { node: { missingCallbacks: string[] } }) => e.node.missingCallbacks.includes('LIVE_START'))
      .map((e: { node: unknown }) => e.node)
    expect(flagged).toEqual([
      {
        taskId: forgetful.taskId,
        serviceCode: forgetful.serviceCode,
        missingCallbacks: expect.arrayContaining(['LIVE_START']),
      },
    ])
    expect(reconciled.missingStart).toBe(1)
    expect(reconciled.delayP50Ms).toBeGreaterThanOrEqual(0)
    expect(reconciled.delayP99Ms).toBeGreaterThanOrEqual(reconciled.delayP50Ms)
    const metrics = await scrapeMetrics(gateway.url)
    const missing = (kind: string, code: string) =>
      metrics.find(
        (s) =>
          s.name === 'livegate_callbacks_missing_total' && s.labels.kind === kind && s.labels.service_code === code,
      )?.value ?? 0
    expect(missing('start', forgetful.serviceCode)).toBe(1)
    expect(missing('start', CODES.find((c) => c !== forgetful.serviceCode) as string)).toBe(0)
    // Vanished sessions sent no type 1: each is a missing end of its code, found once.
    for (const code of CODES) {
      const vanished = planned.sessions.filter((s) => s.serviceCode === code && s.ending === 'VANISHED').length
      await expect
        .poll(
          async () =>
            (await scrapeMetrics(gateway.url)).find(
              (s) =>
                s.name === 'livegate_callbacks_missing_total' &&
                s.labels.kind === 'end' &&
                s.labels.service_code === code,
            )?.value ?? 0,
          {
            timeout: 60_000,
          },
        )
        .toBe(vanished)
    }
    expect(metrics.some((s) => s.name === 'livegate_callback_delay_seconds_count' && s.value > 0)).toBe(true)
  })

  it('rolls the samples up per minute and per service code', async () => {
    const code = CODES[0] as string
    const query =
      'query($code: String!, $from: DateTime, $to: DateTime) { raw: serviceMetrics(serviceCode: $code, step: ' +
      'RAW, from: $from, to: $to) { at samples liveTasks viewers } minute: serviceMetrics(serviceCode: $code, ' +
      'from: $from, to: $to) { at samples liveTasks viewers viewersMax } }'
    const answer = await graphql(gateway, query, { code, ...window() }, asAll)
    expect(answer.errors).toBeUndefined()
    const { raw, minute } = answer.data
    expect(raw.length).toBeGreaterThan(0)
    // Each minute holds every answer of its minute that listed a task.
    const counted = minute.reduce((n: number, p: { samples: number }) => n + p.samples, 0)
    expect(counted).toBeGreaterThanOrEqual(raw.length)
    expect(Math.max(...minute.map((p: { viewersMax: number }) => p.viewersMax))).toBe(
      Math.max(...raw.map((p: { viewers: number }) => p.viewers)),
    )
  })

  it(
    "holds a task's first minute and its first hour in its " + 'default window (the buckets start before the task)',
    async () => {
      const query = `query($id: ID!) { task(id: $id) {
      raw: metrics(step: RAW) { samples }
      minutes: metrics(step: MINUTE) { at samples }
      hours: metrics(step: HOUR) { at samples }
    } }`
      const total = (points: Array<{ samples: number }>) => points.reduce((n, p) => n + p.samples, 0)
      for (const session of simulator.scenario().sessions.filter((s) => answers.has(s.taskId))) {
        const answer = await graphql(gateway, query, { id: taskGlobalId(session.serviceCode, session.taskId) }, asAll)
        expect(answer.errors).toBeUndefined()
        const { raw, minutes, hours } = answer.data.task
        expect(raw.length, session.taskId).toBeGreaterThan(0)
        // Every raw sample lies in one minute and one hour of the default window.
        expect(total(minutes), session.taskId).toBe(total(raw))
        expect(total(hours), session.taskId).toBe(total(raw))
        for (const point of [...minutes, ...hours]) expect(Date.parse(point.at) % 60_000).toBe(0)
      }
    },
  )

  it('holds the tenant scope on every new field and on metricsSampled', async () => {
    const other = planned.sessions.find((s) => s.serviceCode === 'TWO') as Scenario['sessions'][number]
    const mine = planned.sessions.find((s) => s.serviceCode === 'ONE') as Scenario['sessions'][number]
    const series = await graphql(
      gateway,
      'query($code: String!) { serviceMetrics(serviceCode: $code, step: HOUR) { at samples } }',
      { code: 'TWO' },
      asOne,
    )
    expect(series.data).toEqual({ serviceMetrics: [] })
    const own = await graphql(
      gateway,
      'query($code: String!) { serviceMetrics(serviceCode: $code, step: HOUR) { at samples } }',
      { code: 'ONE' },
      asOne,
    )
    expect(own.data.serviceMetrics.length).toBeGreaterThan(0)
    const upstream = await graphql(
      gateway,
      '{ upstream(serviceCode: "TWO") { callbacks { missingStart missingEnd delayP50Ms delayP99Ms } } }',
      {},
      asOne,
    )
    expect(upstream.data.upstream.callbacks).toEqual({
      missingStart: 0,
      missingEnd: 0,
      delayP50Ms: null,
      delayP99Ms: null,
    })
    expect((await graphql(gateway, TASK_SERIES, { id: taskGlobalId('TWO', other.taskId) }, asOne)).data).toEqual({
      task: null,
    })
    const mineAnswer = await graphql(gateway, TASK_SERIES, { id: taskGlobalId('ONE', mine.taskId), ...window() }, asOne)
    expect(mineAnswer.data.task.metrics.length).toBeGreaterThan(0)
    expect(mineAnswer.data.task.peakViewers).toBeGreaterThanOrEqual(0)
    // The subscription with ONE's key saw samples, all of ONE's tasks.
    expect(sampledAsOne.events.length).toBeGreaterThan(0)
    expect(new Set(sampledAsOne.events.map((e) => e.metricsSampled.task.serviceCode))).toEqual(new Set(['ONE']))
    // One event per task per answer that listed it (the last may still be on its way).
    const perTask = () => {
      const counts = new Map<string, number>()
      for (const event of sampledAsOne.events)
        counts.set(event.metricsSampled.task.taskId, (counts.get(event.metricsSampled.task.taskId) ?? 0) + 1)
      return Object.fromEntries(counts)
    }
    const expected = Object.fromEntries(
      planned.sessions
        .filter((s) => s.serviceCode === 'ONE' && answers.has(s.taskId))
        .map((s) => [s.taskId, answers.get(s.taskId)?.length]),
    )
    await expect.poll(perTask, { timeout: 60_000 }).toEqual(expected)
  })

  it('refuses bad windows with BAD_USER_INPUT naming the argument', async () => {
    const code = (query: string, variables: Record<string, unknown>) =>
      graphql(gateway, query, variables, asAll).then((a) =>
        a.errors?.map((e) => [e.extensions?.code, e.extensions?.argumentName]),
      )
    const q =
      'query($from: DateTime, $to: DateTime, $step: MetricStep) { serviceMetrics(serviceCode: "ONE", step: ' +
      '$step, from: $from, to: $to) { at } }'
    expect(await code(q, { from: '2026-01-02T00:00:00Z', to: '2026-01-01T00:00:00Z' })).toEqual([
      ['BAD_USER_INPUT', 'from'],
    ])
    expect(await code(q, { from: '2020-01-01T00:00:00Z', to: '2026-01-01T00:00:00Z', step: 'HOUR' })).toEqual([
      ['BAD_USER_INPUT', 'from'],
    ])
    const now = Date.now()
    expect(
      await code(q, {
        from: new Date(now - 72 * 3_600_000).toISOString(),
        to: new Date(now).toISOString(),
        step: 'RAW',
      }),
    ).toEqual([['BAD_USER_INPUT', 'from']])
    expect(
      await code(q, {
        from: new Date(now - 3 * 86_400_000).toISOString(),
        to: new Date(now - 3 * 86_400_000 + 600_000).toISOString(),
        step: 'RAW',
      }),
    ).toEqual([['BAD_USER_INPUT', 'step']])
    expect(
      await code(q, {
        from: new Date(now - 40 * 86_400_000).toISOString(),
        to: new Date(now - 39 * 86_400_000).toISOString(),
        step: 'MINUTE',
      }),
    ).toEqual([['BAD_USER_INPUT', 'step']])
  })
})
