import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { databaseEnv, describeOnServer, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { SECRET } from '../support/gateway.fixture.js'
import { postCallbackOnce, startServeProcess } from '../support/livegate.process.js'
import { parseMetrics } from '../support/metrics.scrape.js'
import { type Receiver, startReceiver, WEBHOOK_SECRET } from '../support/receiver.process.js'

/** Every line a process of the cluster printed, as JSON, with the worker it names. */
type Line = { msg: string; worker?: number; pid?: number; eventId?: string }
const lines = (output: string): Line[] =>
  output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Line)

const DELIVERING = /^webhook worker: puts every worker's events in line/

/** `serve --workers 2` on the test server with one endpoint, `a`, for every callback, on the receiver. */
async function startCluster(db: TestDatabase, receiver: Receiver, webhooks: Record<string, unknown>) {
  const file = join(mkdtempSync(join(tmpdir(), 'livegate-webhook-worker-')), 'livegate.json')
  writeFileSync(
    file,
    JSON.stringify({
      port: 0,
      services: [{ serviceCode: 'TESTING', secrets: [SECRET] }],
      webhooks: {
        ...webhooks,
        endpoints: [
          {
            name: 'a',
            url: `${receiver.url}/hooks/a`,
            secret: WEBHOOK_SECRET,
            serviceCodes: '*',
            events: ['callback.*'],
          },
        ],
      },
    }),
  )
  const serve = await startServeProcess(['--config', file, '--workers', '2'], {
    ...process.env,
    ...databaseEnv(db),
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
  })
  return { primary: serve.process, url: serve.url, output: serve.output }
}

/** Posts one signed callback of `taskId` through the port, on a connection of its own (so to either worker). */
async function post(url: string, taskId: string, seq: number): Promise<void> {
  const fields = { ...sampleCallbacks(taskId).liveResume, seq: String(seq) } as Record<string, string>
  expect(await postCallbackOnce(url, fields, SECRET)).toBe(200)
}

/** The seqs of `taskId`'s callbacks the receiver took (verified, answered 200). */
async function deliveredSeqs(receiver: Receiver, taskId: string): Promise<Set<string>> {
  return new Set(
    (await receiver.received('/hooks/a'))
      .filter((receipt) => receipt.verified && receipt.body.data.taskId === taskId && receipt.answered === 200)
      .map((receipt) => String((receipt.body.data.fields as Record<string, string>).seq)),
  )
}

// Several processes share only a server: PGlite is one process's own database.
describeOnServer('serve --workers 2 with a webhook endpoint: one worker of its own delivers', () => {
  let db: TestDatabase
  let receiver: Receiver
  let primary: ChildProcess
  let url = ''
  let output = () => ''

  const deliverer = () => lines(output()).filter((line) => DELIVERING.test(line.msg))

  beforeAll(async () => {
    db = await openTestDatabase()
    receiver = await startReceiver()
    ;({ primary, url, output } = await startCluster(db, receiver, {
      // A killed worker's claims are taken over once their lease (three timeouts and 5 s) runs out.
      timeoutMs: 1000,
      retrySchedule: [200, 200, 200, 200, 200],
    }))
  }, 600_000)

  afterAll(async () => {
    primary?.kill('SIGKILL')
    await receiver?.stop()
    await db?.drop()
  })

  it('delivers every callback once, and every attempt is made by the webhook worker, ' +
    'not by the HTTP workers', async () => {
    const taskId = `hooks-${Date.now()}`
    // The receiver's next three answers are 500s: whichever attempts they meet fail and are logged with the
    // worker that made them. A retry (after 200 ms) may meet one before a later callback's first attempt does,
    // so which attempt of which callback fails is up to timing; that three attempts fail, and who made them, is not.
    await receiver.plan('/hooks/a', [{ status: 500 }, { status: 500 }, { status: 500 }])
    for (let seq = 0; seq < 20; seq++) await post(url, taskId, seq)
    await expect
      .poll(async () => (await deliveredSeqs(receiver, taskId)).size, { timeout: 60_000, interval: 250 })
      .toBe(20)
    const receipts = (await receiver.received('/hooks/a')).filter((receipt) => receipt.body.data.taskId === taskId)
    expect(receipts.filter((receipt) => receipt.answered === 500)).toHaveLength(3)
    // One event per callback, not one per HTTP worker that took it.
    const eventOf = new Map<string, Set<string>>()
    for (const { id, body } of receipts) {
      const seq = String((body.data.fields as Record<string, string>).seq)
      eventOf.set(seq, (eventOf.get(seq) ?? new Set()).add(id))
    }
    expect([...eventOf.values()].map((ids) => ids.size)).toEqual(Array(20).fill(1))
    // Each event reached the receiver again only after an attempt at it failed (a 500, or a timeout on a loaded
    // machine): never twice for one attempt, nor once by each of two workers. An attempt's failure is logged
    // before its retry is claimed; the poll waits for the lines to come through the primary's output.
    const failed = () => lines(output()).filter((line) => /^webhooks: attempt \d+ to a failed/.test(line.msg))
    const unexplained = () =>
      [...new Set(receipts.map((receipt) => receipt.id))].flatMap((id) => {
        const tries = receipts.filter((receipt) => receipt.id === id).length
        const failures = failed().filter((line) => line.eventId === id).length
        return tries - 1 > failures ? [{ id, tries, failures }] : []
      })
    await expect.poll(unexplained, { timeout: 30_000, interval: 250 }).toEqual([])
    const [webhookWorker] = deliverer()
    expect(webhookWorker?.worker).toBeGreaterThan(0)
    const keptBy = new Set(lines(output()).flatMap((line) => (line.msg === 'callback kept' ? [line.worker] : [])))
    expect(keptBy.size).toBeGreaterThan(0)
    expect(keptBy.has(webhookWorker?.worker)).toBe(false)
    const failures = failed()
    expect(failures.length).toBeGreaterThanOrEqual(3)
    expect(new Set(failures.map((line) => line.worker))).toEqual(new Set([webhookWorker?.worker]))
    // Its metrics are gathered with the HTTP workers': /metrics, asked of either, counts its attempts.
    const samples = parseMetrics(await (await fetch(`${url}/metrics`)).text())
    const attempts = (outcome: string) =>
      samples
        .filter((s) => s.name === 'livegate_webhook_attempts_total' && s.labels.outcome === outcome)
        .reduce((n, s) => n + s.value, 0)
    expect(attempts('delivered')).toBeGreaterThanOrEqual(20)
    // Counted before it is logged: at least every failure the output showed so far.
    expect(attempts('retry')).toBeGreaterThanOrEqual(failures.length)
    expect(samples.find((s) => s.name === 'livegate_workers')?.value).toBe(2)
  }, 300_000)

  it('a webhook worker killed outright is replaced, and what it held or what came meanwhile is delivered', async () => {
    const taskId = `hooks-killed-${Date.now()}`
    const [first] = deliverer()
    // Held: a hanging answer keeps a delivery claimed by the worker about to be killed.
    await receiver.plan('/hooks/a', [{ hang: true }])
    await post(url, taskId, 0)
    await expect.poll(async () => (await receiver.received('/hooks/a')).some((r) => r.answered === 'hang')).toBe(true)
    process.kill(first?.pid as number, 'SIGKILL')
    for (let seq = 1; seq < 10; seq++) await post(url, taskId, seq)
    await expect.poll(() => deliverer().length, { timeout: 120_000, interval: 250 }).toBe(2)
    await expect
      .poll(async () => (await deliveredSeqs(receiver, taskId)).size, { timeout: 120_000, interval: 250 })
      .toBe(10)
    expect(deliverer()[1]?.pid).not.toBe(first?.pid)
    expect(output()).toMatch(/worker crashed; a new one starts/)
  }, 300_000)

  it('SIGTERM to the primary stops the webhook worker with the others, and it exits 0', async () => {
    const exited = new Promise<number | null>((resolve) => primary.once('exit', (code) => resolve(code)))
    primary.kill('SIGTERM')
    expect(await exited).toBe(0)
    expect(output()).toContain('every worker stopped')
  }, 120_000)
})

describeOnServer('serve --workers 2 with webhooks.ownWorker false: every HTTP worker delivers', () => {
  let db: TestDatabase
  let receiver: Receiver
  let primary: ChildProcess | undefined

  beforeAll(async () => {
    db = await openTestDatabase()
    receiver = await startReceiver()
  }, 120_000)

  afterAll(async () => {
    primary?.kill('SIGKILL')
    await receiver?.stop()
    await db?.drop()
  })

  it('starts no webhook worker, and delivers every callback once', async () => {
    const started = await startCluster(db, receiver, { ownWorker: false })
    primary = started.primary
    const taskId = `hooks-shared-${Date.now()}`
    for (let seq = 0; seq < 10; seq++) await post(started.url, taskId, seq)
    await expect.poll(async () => (await deliveredSeqs(receiver, taskId)).size, { timeout: 60_000 }).toBe(10)
    expect(lines(started.output()).some((line) => DELIVERING.test(line.msg))).toBe(false)
    expect(started.output()).toMatch(/2 workers serve http:\S+ \(node:cluster\)"/)
  }, 300_000)
})
