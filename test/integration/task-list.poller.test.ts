import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { leaseHolder } from '../../src/storage/lease.statements.js'
import { readUpstreamStatus } from '../../src/storage/history/upstream-status.statements.js'
import { TaskListClient } from '../../src/work/graph/task-list.client.js'
import { pollDelayMs } from '../../src/work/graph/task-list.answer.js'
import { TaskListPoller } from '../../src/work/graph/task-list.poller.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { SECRET } from '../support/gateway.fixture.js'
import { type FakeUpstream, startFakeUpstream } from '../support/upstream.server.js'

const silent = { info() {}, warn() {}, error() {}, debug() {} }
const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await wait(10)
  }
}

describe('the back-off of a failing task_list', () => {
  it(
    'doubles the wait per failure, within half a step of ' + 'jitter, up to the cap; a success restores the interval',
    () => {
      const low = () => 0
      const high = () => 0.999999
      expect(pollDelayMs(0, 1000, 60_000, high)).toBe(1000)
      expect([1, 2, 3, 4].map((n) => pollDelayMs(n, 1000, 60_000, low))).toEqual([1000, 2000, 4000, 8000])
      expect([1, 2, 3, 4].map((n) => pollDelayMs(n, 1000, 60_000, high))).toEqual([2000, 4000, 8000, 16_000])
      expect(pollDelayMs(50, 1000, 60_000, high)).toBe(60_000)
      expect(pollDelayMs(50, 1000, 60_000, low)).toBe(30_000)
    },
  )
})

describe(`the task_list poller (${driverName})`, () => {
  let db: TestDatabase
  let upstream: FakeUpstream
  let poller: TaskListPoller

  beforeAll(async () => {
    db = await openTestDatabase()
    upstream = await startFakeUpstream()
  })
  afterAll(async () => {
    await poller?.stop()
    await upstream?.close()
    await db?.drop()
  })

  it('spaces the requests of a failing upstream further apart ' +
    'each time, and back to the interval after a success', async () => {
    const config = loadConfig({
      env: {},
      value: {
        services: [{ serviceCode: 'FLAKY', secrets: [SECRET], baseUrl: upstream.url }],
        upstream: { retries: 0, timeoutMs: 1000 },
      },
    })
    const client = new TaskListClient({ services: config.services, options: config.upstream })
    // The middle of each jittered step: the waits are 300, 600, 1200, 2400 ms after 1 to 4 failures.
    poller = new TaskListPoller({
      db: db.database.db,
      client,
      serviceCodes: ['FLAKY'],
      intervalMs: 200,
      maxBackoffMs: 10_000,
      instanceId: 'test-instance',
      log: silent,
      random: () => 0.5,
    })
    upstream.answer({ status: 500, body: 'down' })
    poller.start()
    await until(() => upstream.arrivals.length >= 4)
    upstream.answer({ status: 200, body: '{"ret":0,"task_list":[],"user_list":[]}' })
    // The fourth failure is stored (and its back-off with it) well before the fifth request.
    await until(
      async () => (await readUpstreamStatus(db.database.db, ['FLAKY'])).get('FLAKY')?.consecutiveFailures === 4,
    )
    expect((await readUpstreamStatus(db.database.db, ['FLAKY'])).get('FLAKY')).toMatchObject({
      lastErrorKind: 'HTTP',
      nextPollAt: expect.any(Date),
    })
    await until(() => upstream.arrivals.length >= 7)
    const gaps = upstream.arrivals.slice(1, 7).map((at, i) => at - (upstream.arrivals[i] as number))
    const [g1, g2, g3, g4, afterSuccess, next] = gaps as [number, number, number, number, number, number]
    // The first gap also pays for opening connections; the others only for a request and a write.
    expect(g1).toBeLessThan(g4)
    expect(g2).toBeLessThan(g3)
    expect(g3).toBeLessThan(g4)
    // The fifth request succeeded: the next ones come at the interval again.
    expect(afterSuccess).toBeLessThan(g4)
    expect(next).toBeLessThan(g4)
    const recovered = (await readUpstreamStatus(db.database.db, ['FLAKY'])).get('FLAKY')
    expect(recovered).toMatchObject({ consecutiveFailures: 0, lastErrorKind: 'HTTP' })
    expect(recovered?.lastSuccessAt?.getTime()).toBeGreaterThan(recovered?.lastErrorAt?.getTime() ?? Infinity)
    expect(await leaseHolder(db.database.db, 'task_list:FLAKY')).toBe('test-instance')
  }, 300_000)

  it('gives the lease up on stop, and a hanging request does not hold the stop', async () => {
    upstream.answer('never')
    await until(() => upstream.pending() > 0)
    await poller.stop()
    expect(await leaseHolder(db.database.db, 'task_list:FLAKY')).toBeNull()
    await until(() => upstream.pending() === 0)
  })
})
