import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { loadConfig } from '../../src/config/index.js'
import { type Database, openDatabase, resultRows } from '../../src/storage/database.client.js'
import { createSamplePartitions, partitionOf } from '../../src/storage/history/sample.partitions.js'
import { startSimulator, type Simulator } from '../../src/simulator/simulator.run.js'
import { driverName, openTestDatabase, serverUrl, type TestDatabase } from '../support/database.fixture.js'
import { startServeProcess } from '../support/livegate.process.js'
import { scratchDirs } from '../support/scratch.dir.js'
import { freePort } from '../support/free.port.js'

const HOUR = 3_600_000

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
    simulator = await startSimulator({
      port,
      services: [{ serviceCode: 'AGED', secret: 'abc' }],
      seed: 3,
      sessions: 4,
      rate: 0.5,
      loop: true,
    })
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
    resultRows<{ name: string }>(
      await db.database.db.execute(
        sql`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent =
          'task_samples'::regclass`,
      ),
    ).map((r) => r.name)
  const count = async (table: string, before: number) =>
    Number(
      resultRows<{ n: unknown }>(
        await db.database.db.execute(
          sql`select count(*) as n from ${sql.raw(table)} where at < ${new Date(before).toISOString()}::timestamptz`,
        ),
      )[0]?.n,
    )

  it('drops whole partitions of raw samples past history.rawRetention, and keeps the rollups', async () => {
    await expect
      .poll(() => count('task_samples', realStart - 50 * HOUR), { timeout: 120_000, interval: 200 })
      .toBeGreaterThan(0)
    // The partition of the first sample, not of the test's start: an hour may turn in between.
    const [first] = resultRows<{ ms: number }>(
      await db.database.db.execute(sql`select (extract(epoch from min(at)) * 1000)::float8 as ms from task_samples`),
    )
    const old = partitionOf(Number(first?.ms)).name
    expect(await partitions()).toContain(old)
    // Two and a half days later by the gateway's clock.
    offset = 0
    await expect.poll(async () => (await partitions()).includes(old), { timeout: 120_000, interval: 200 }).toBe(false)
    expect(await count('task_samples', realStart - 50 * HOUR)).toBe(0)
    // New samples land in the partition of now, created ahead as they came.
    await expect
      .poll(() => count('task_samples', Date.now() + HOUR), { timeout: 120_000, interval: 200 })
      .toBeGreaterThan(0)
    expect(await partitions()).toContain(partitionOf(Date.now()).name)
    // The rollups of those old samples are kept far longer.
    expect(await count('task_metrics_minute', realStart - 50 * HOUR)).toBeGreaterThan(0)
    expect(await count('service_metrics_hour', realStart - 50 * HOUR)).toBeGreaterThan(0)
  })
})

const scratch = scratchDirs('livegate-retention-')

// The same prune in `livegate serve`, a process of its own, on history left from days ago: the
// process's clock is the real one, so the old partition is made before it starts.
describe(`history retention in livegate serve, a process of its own, on ${driverName}`, () => {
  let simulator: Simulator | undefined
  let server: TestDatabase | undefined
  afterAll(async () => {
    await simulator?.stop()
    await server?.drop()
  })

  it('drops the partition of raw samples past history.rawRetention and keeps its rollups', async () => {
    const dir = scratch()
    // On the server, a database of the test's own; PGlite in a data directory the process opens after the test closes
    // it.
    server = serverUrl ? await openTestDatabase() : undefined
    const open = async (): Promise<Database> => {
      if (server) return server.database
      const database = await openDatabase({ dataDir: join(dir, 'data') })
      await database.migrate()
      return database
    }
    const old = Date.now() - 60 * HOUR
    const before = await open()
    await createSamplePartitions(before.db, old)
    const at = new Date(old).toISOString()
    await before.db.execute(
      sql`insert into task_samples (service_code, task_id, at, viewers, input_bytes, output_bytes, outputs) values
        ('AGED', 'old-task', ${at}::timestamptz, 7, 1000, 2000, '[]'::jsonb)`,
    )
    await before.db.execute(sql`insert into task_metrics_minute (service_code, task_id, at, samples, viewers_sum,
      viewers_max, input_bytes, input_seconds, output_bytes, output_seconds)
      values ('AGED', 'old-task', date_trunc('minute', ${at}::timestamptz), 1, 7, 7, 0, 0, 0, 0)`)
    const partitions = async (database: Database) =>
      resultRows<{ name: string }>(
        await database.db.execute(
          sql`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent =
            'task_samples'::regclass`,
        ),
      ).map((r) => r.name)
    expect(await partitions(before)).toContain(partitionOf(old).name)
    if (!server) await before.close()

    // Only a gateway that polls a task_list prunes: the simulator plays one.
    simulator = await startSimulator({
      services: [{ serviceCode: 'AGED', secret: 'abc' }],
      seed: 3,
      sessions: 2,
      rate: 0.5,
      loop: true,
    })
    const configFile = join(dir, 'livegate.json')
    writeFileSync(
      configFile,
      JSON.stringify({
        port: 0,
        services: [{ serviceCode: 'AGED', secrets: ['abc'], baseUrl: simulator.url }],
        history: { rawRetention: '48h', pruneIntervalMs: 300 },
      }),
    )
    const database = server?.url
      ? { DATABASE_URL: server.url }
      : { DATABASE_URL: '', LIVEGATE_DATA_DIR: join(dir, 'data') }
    const serve = await startServeProcess(['--config', configFile], { ...process.env, ...database, LOG_LEVEL: 'info' })
    try {
      await expect
        .poll(() => serve.output(), { timeout: 120_000, interval: 200 })
        .toMatch(/history: dropped \d+ partitions of raw samples/)
    } finally {
      const exited = new Promise((resolve) => serve.process.once('exit', resolve))
      serve.process.kill('SIGTERM')
      await exited
    }
    const after = await open()
    try {
      expect(await partitions(after)).not.toContain(partitionOf(old).name)
      const kept = resultRows<{ n: unknown }>(
        await after.db.execute(sql`select count(*) as n from task_metrics_minute where task_id = 'old-task'`),
      )
      expect(Number(kept[0]?.n)).toBe(1)
    } finally {
      if (!server) await after.close()
    }
  })
})
