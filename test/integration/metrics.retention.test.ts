import { createServer } from 'node:net'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { loadConfig } from '../../src/config/index.js'
import { resultRows } from '../../src/storage/database.client.js'
import { partitionOf } from '../../src/storage/sample.partitions.js'
import { startSimulator, type Simulator } from '../../src/simulator/simulator.run.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'

const HOUR = 3_600_000

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise((resolve) => server.close(resolve))
  return port
}

describe(`history retention on ${driverName}`, () => {
  let db: TestDatabase
  let gateway: Gateway
  let simulator: Simulator
  // The gateway's clock: the poller stamps samples with it, and the prune judges age by it.
  const realStart = Date.now()
  let offset = -60 * HOUR

  beforeAll(async () => {
    db = await openTestDatabase()
    const port = await freePort()
    // Only the task_list is played (no callbacks: they would be signed by the real clock).
    simulator = await startSimulator({ port, services: [{ serviceCode: 'AGED', secret: 'abc' }], seed: 3, sessions: 4, rate: 0.5, loop: true })
    const config = loadConfig({
      env: {},
      value: {
        port: 0,
        log: { level: 'silent' },
        services: [{ serviceCode: 'AGED', secrets: ['abc'], baseUrl: simulator.url }],
        upstream: { pollIntervalMs: 200 },
        history: { rawRetention: '48h', pruneIntervalMs: 300 },
      },
    })
    gateway = await startGateway(config, { database: db.database, now: () => new Date(Date.now() + offset) })
  }, 300_000)

  afterAll(async () => {
    await simulator?.stop()
    await gateway?.close()
    await db?.drop()
  })

  const partitions = async () =>
    resultRows<{ name: string }>(await db.database.db.execute(sql`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'task_samples'::regclass`)).map((r) => r.name)
  const count = async (table: string, before: number) =>
    Number(resultRows<{ n: unknown }>(await db.database.db.execute(sql`select count(*) as n from ${sql.raw(table)} where at < ${new Date(before).toISOString()}::timestamptz`))[0]?.n)

  it('drops whole partitions of raw samples past history.rawRetention, and keeps the rollups', async () => {
    const old = partitionOf(realStart - 60 * HOUR).name
    await expect.poll(() => count('task_samples', realStart - 50 * HOUR), { timeout: 120_000, interval: 200 }).toBeGreaterThan(0)
    expect(await partitions()).toContain(old)
    // Two and a half days later by the gateway's clock.
    offset = 0
    await expect.poll(async () => (await partitions()).includes(old), { timeout: 120_000, interval: 200 }).toBe(false)
    expect(await count('task_samples', realStart - 50 * HOUR)).toBe(0)
    // New samples land in the partition of now, created ahead as they came.
    await expect.poll(() => count('task_samples', Date.now() + HOUR), { timeout: 120_000, interval: 200 }).toBeGreaterThan(0)
    expect(await partitions()).toContain(partitionOf(Date.now()).name)
    // The rollups of those old samples are kept far longer.
    expect(await count('task_metrics_minute', realStart - 50 * HOUR)).toBeGreaterThan(0)
    expect(await count('service_metrics_hour', realStart - 50 * HOUR)).toBeGreaterThan(0)
  })
})
