import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSimulator, type Simulator } from '../../src/simulator/simulator.run.js'
import { generateScenario, type Scenario } from '../../src/simulator/session.scenario.js'
import { driverName, openTestDatabase, serverUrl, type TestDatabase } from '../support/database.fixture.js'
import { freePort } from '../support/free.port.js'
import { type ServeProcess, startServeProcess } from '../support/livegate.process.js'
import { scratchDirs } from '../support/scratch.dir.js'
import { type Receipt, type Receiver, startReceiver, WEBHOOK_SECRET } from '../support/receiver.process.js'

const SECRET = 'abc'
const CODES = ['ONE', 'TWO']
// The seed of audience.history.test.ts: a stalled input, a forgotten start, vanished sessions.
const PLAY = { seed: 1717, sessions: 8, rate: 3 }

const scratch = scratchDirs('livegate-webhook-derived-')

// What livegate derives, pushed as signed webhooks: `livegate serve` (two workers on a server)
// polls the simulator, which plays the cloud both ways; a receiver process verifies every body.
describe(`derived webhook events from the real simulator, on ${driverName}`, () => {
  let db: TestDatabase | undefined
  let serve: ServeProcess
  let simulator: Simulator
  let receiver: Receiver
  let planned: Scenario

  beforeAll(async () => {
    db = serverUrl ? await openTestDatabase() : undefined
    receiver = await startReceiver()
    const port = await freePort()
    const configFile = join(scratch(), 'livegate.json')
    writeFileSync(
      configFile,
      JSON.stringify({
        port: 0,
        services: CODES.map((serviceCode) => ({ serviceCode, secrets: [SECRET], baseUrl: `http://127.0.0.1:${port}` })),
        upstream: { pollIntervalMs: 250, timeoutMs: 2000 },
        // The simulator's callbacks reach a busy machine's gateway late: a grace shorter than that lag would judge
        // an end the cloud did send as forgotten.
        reconcile: { graceMs: 30_000 },
        webhooks: {
          retrySchedule: ['200ms', '500ms', '1s'],
          endpoints: [
            {
              name: 'ops',
              url: `${receiver.url}/hooks/ops`,
              secret: WEBHOOK_SECRET,
              serviceCodes: '*',
              events: ['task.*', 'upstream.*'],
            },
            {
              name: 'ends',
              url: `${receiver.url}/hooks/ends`,
              secret: { env: 'ENDS_SECRET' },
              serviceCodes: ['ONE'],
              events: ['callback.live_end'],
            },
          ],
        },
      }),
    )
    const database = db?.url ? { DATABASE_URL: db.url } : { DATABASE_URL: '', LIVEGATE_DATA_DIR: 'memory://' }
    serve = await startServeProcess(['--config', configFile], {
      ...process.env,
      ...database,
      ENDS_SECRET: WEBHOOK_SECRET,
      LOG_LEVEL: 'info',
    })
    planned = generateScenario({ ...PLAY, serviceCodes: CODES, audience: true })
    simulator = await startSimulator({
      port,
      services: CODES.map((serviceCode) => ({ serviceCode, secret: SECRET })),
      gatewayUrl: serve.url,
      ...PLAY,
    })
    await simulator.done
  }, 600_000)

  afterAll(async () => {
    await simulator?.stop()
    if (serve && serve.process.exitCode === null) {
      const exited = new Promise((resolve) => serve.process.once('exit', resolve))
      serve.process.kill('SIGTERM')
      await exited
    }
    await receiver?.stop()
    await db?.drop()
  })

  const ofType = (receipts: Receipt[], type: string) => receipts.filter((receipt) => receipt.body.type === type)

  it('tells every task that started and ended, VANISHED included, once each, signed', async () => {
    const vanished = planned.sessions.filter((session) => session.ending === 'VANISHED')
    expect(vanished.length).toBeGreaterThan(0)
    await expect
      .poll(
        async () =>
          new Set(
            ofType(await receiver.received('/hooks/ops'), 'task.ended').map((receipt) => receipt.body.data.taskId),
          ).size,
        { timeout: 90_000 },
      )
      .toBe(planned.sessions.length)
    const receipts = await receiver.received('/hooks/ops')
    expect(receipts.every((receipt) => receipt.verified)).toBe(true)
    // Every 2xx answered once: no event went twice, whichever worker sent it.
    expect(new Set(receipts.map((receipt) => receipt.id)).size).toBe(receipts.length)
    for (const session of vanished) {
      const ended = ofType(receipts, 'task.ended').find((receipt) => receipt.body.data.taskId === session.taskId)
      expect(ended?.body.data).toMatchObject({
        taskId: session.taskId,
        serviceCode: session.serviceCode,
        status: 'ENDED',
        endReason: 'VANISHED',
      })
      expect(typeof ended?.body.data.id).toBe('string')
    }
    const started = new Set(ofType(receipts, 'task.started').map((receipt) => receipt.body.data.taskId))
    expect(started).toEqual(new Set(planned.sessions.map((session) => session.taskId)))
  })

  it('tells the stalled input going STARVING, and the start the cloud forgot', async () => {
    const stalled = planned.sessions.find((session) => session.audience?.stall)
    const forgetful = planned.sessions.find((session) => session.audience?.forgetsStart)
    if (!stalled || !forgetful) throw new Error('the scenario has no stall or no forgotten start')
    await expect
      .poll(
        async () =>
          ofType(await receiver.received('/hooks/ops'), 'task.health_changed')
            .filter((receipt) => receipt.body.data.taskId === stalled.taskId)
            .map((receipt) => receipt.body.data.to),
        { timeout: 90_000 },
      )
      .toContain('STARVING')
    const health = ofType(await receiver.received('/hooks/ops'), 'task.health_changed').find(
      (receipt) => receipt.body.data.taskId === stalled.taskId && receipt.body.data.to === 'STARVING',
    )
    expect(health?.body.data).toMatchObject({ from: 'HEALTHY', to: 'STARVING', serviceCode: stalled.serviceCode })
    await expect
      .poll(
        async () =>
          ofType(await receiver.received('/hooks/ops'), 'task.callback_missing')
            .filter((receipt) => receipt.body.data.taskId === forgetful.taskId)
            .map((receipt) => receipt.body.data.kind),
        { timeout: 90_000 },
      )
      .toEqual(['LIVE_START'])
  })

  it("sends an endpoint of one code only that code's callbacks, with a secret from the environment", async () => {
    const ends = planned.callbacks.filter(
      (callback) => callback.fields.type === '1' && callback.fields.service_code === 'ONE',
    ).length
    expect(ends).toBeGreaterThan(0)
    await expect.poll(async () => (await receiver.received('/hooks/ends')).length, { timeout: 90_000 }).toBe(ends)
    const receipts = await receiver.received('/hooks/ends')
    expect(
      receipts.every(
        (receipt) =>
          receipt.verified && receipt.body.type === 'callback.live_end' && receipt.body.data.serviceCode === 'ONE',
      ),
    ).toBe(true)
  })

  it('tells a task list gone stale once the cloud stops answering', async () => {
    await simulator.stop()
    await expect
      .poll(
        async () =>
          ofType(await receiver.received('/hooks/ops'), 'upstream.stale')
            .map((receipt) => receipt.body.data.serviceCode)
            .sort(),
        { timeout: 90_000 },
      )
      .toEqual(CODES)
  })
})
