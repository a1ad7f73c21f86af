import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { generateScenario } from '../../src/simulator/session.scenario.js'
import { startTaskListServer, type TaskListServer } from '../../src/simulator/task-list.server.js'
import { taskListAt } from '../../src/simulator/task-list.snapshot.js'
import { openTestDatabase, type TestDatabase, describeOnServer } from '../support/database.fixture.js'
import { SECRET } from '../support/gateway.fixture.js'
import { startServeProcess } from '../support/livegate.process.js'
import { metricValue, scrapeMetrics } from '../support/metrics.scrape.js'

const CODES = ['ONE', 'TWO']
const scenario = generateScenario({ seed: 5, sessions: 2, serviceCodes: CODES, rate: 10 })

/** What one process says of one code: whether it holds the lease, and how many polls it made. */
async function pollingOf(url: string, code: string): Promise<{ held: boolean; polls: number }> {
  const samples = await scrapeMetrics(url)
  return {
    held: metricValue(samples, 'livegate_upstream_lease_held', { service_code: code }) === 1,
    polls: metricValue(samples, 'livegate_upstream_poll_seconds_count', { service_code: code }),
  }
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

// Two processes can share only a server: PGlite is one process's own database.
describeOnServer('two gateway processes on one PostgreSQL server poll each code once between them', () => {
  let db: TestDatabase
  let upstream: TaskListServer
  const gateways: Array<{ process: ChildProcess; url: string }> = []

  beforeAll(async () => {
    db = await openTestDatabase()
    upstream = await startTaskListServer({
      services: CODES.map((serviceCode) => ({ serviceCode, secret: SECRET })),
      source: (code) => taskListAt(scenario, code, 0),
    })
    const configFile = join(mkdtempSync(join(tmpdir(), 'livegate-lease-')), 'livegate.json')
    const services = CODES.map((serviceCode) => ({ serviceCode, secrets: [SECRET], baseUrl: upstream.url }))
    writeFileSync(
      configFile,
      JSON.stringify({ port: 0, services, upstream: { pollIntervalMs: 300, retries: 0, timeoutMs: 2000 } }),
    )
    const serve = () =>
      startServeProcess(['--config', configFile], { ...process.env, DATABASE_URL: db.url as string, LOG_LEVEL: 'info' })
    // One after the other: two cold starts at once on a loaded machine outlast the start timeout.
    gateways.push(await serve())
    gateways.push(await serve())
  }, 90_000)

  afterAll(async () => {
    for (const gateway of gateways) gateway.process.kill('SIGKILL')
    await upstream?.close()
    await db?.drop()
  })

  it('each code is polled by one process at a time; stop it and the other takes over', async () => {
    const [a, b] = gateways as [{ process: ChildProcess; url: string }, { process: ChildProcess; url: string }]
    for (const code of CODES) {
      // Exactly one holder per code, once the first lease round is through.
      await expect
        .poll(
          async () => [(await pollingOf(a.url, code)).held, (await pollingOf(b.url, code)).held].filter(Boolean).length,
          { timeout: 20_000 },
        )
        .toBe(1)
    }
    // Over a few intervals, only the holder's poll count grows.
    const before = await Promise.all(
      CODES.map(async (code) => ({ code, a: await pollingOf(a.url, code), b: await pollingOf(b.url, code) })),
    )
    await wait(1500)
    for (const { code, a: beforeA, b: beforeB } of before) {
      const [afterA, afterB] = [await pollingOf(a.url, code), await pollingOf(b.url, code)]
      const [holderBefore, otherBefore, holderAfter, otherAfter] = beforeA.held
        ? [beforeA, beforeB, afterA, afterB]
        : [beforeB, beforeA, afterB, afterA]
      expect(holderAfter.held, code).toBe(true)
      expect(holderAfter.polls, code).toBeGreaterThan(holderBefore.polls)
      expect(otherAfter.polls, code).toBe(otherBefore.polls)
    }

    // Stop the process that holds ONE: the other takes it over and polls it.
    const holderOfOne = (await pollingOf(a.url, 'ONE')).held ? a : b
    const other = holderOfOne === a ? b : a
    const pollsBefore = (await pollingOf(other.url, 'ONE')).polls
    const exited = new Promise((resolve) => holderOfOne.process.once('exit', resolve))
    holderOfOne.process.kill('SIGTERM')
    await exited
    await expect.poll(async () => (await pollingOf(other.url, 'ONE')).held, { timeout: 20_000 }).toBe(true)
    await expect
      .poll(async () => (await pollingOf(other.url, 'ONE')).polls, { timeout: 20_000 })
      .toBeGreaterThan(pollsBefore)
    await expect.poll(async () => (await pollingOf(other.url, 'TWO')).held, { timeout: 20_000 }).toBe(true)
  }, 90_000)
})
