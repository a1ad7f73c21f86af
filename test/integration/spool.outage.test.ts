import { randomUUID } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig, MEMORY_DATA_DIR } from '../../src/config/index.js'
import { sentFields } from '../../src/model/callback.record.js'
import { callbacks } from '../../src/storage/tables/callback.table.js'
import { type Database, openDatabase } from '../../src/storage/database.client.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import type { SignedRequest } from '../../src/model/callback.sign.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase, describeOnServer } from '../support/database.fixture.js'
import { type Answer, send, signFor, TEST_CONFIG } from '../support/gateway.fixture.js'
import { type PrivateCluster, startPrivateCluster } from '../support/postgres.cluster.js'
import { scratchDirs } from '../support/scratch.dir.js'

const scratch = scratchDirs('livegate-outage-')
const configWith = (dir: string) => loadConfig({ env: {}, value: { ...TEST_CONFIG, spool: { dir } } })
const spooledLines = (dir: string) =>
  readdirSync(dir)
    .filter((name) => name.startsWith('spool-'))
    .sort()
    .flatMap((name) => readFileSync(join(dir, name), 'utf8').split('\n').filter(Boolean))
    .map((line) => JSON.parse(line) as { body: string })
    .map((line) => ({
      fields: { seq: new URLSearchParams(Buffer.from(line.body, 'base64').toString()).get('seq') as string },
    }))

/** A distinct resume notification of one task per `seq`; each is its own event. */
const fieldsFor = (taskId: string, seq: number) => ({
  ...(sampleCallbacks(taskId).liveResume as Record<string, string>),
  seq: String(seq),
})

/** Rows of a task by `seq`, with how often each was delivered. */
async function storedOf(database: Database, taskId: string): Promise<Map<string, number[]>> {
  const rows = (
    await database.db
      .select({
        method: callbacks.method,
        query: callbacks.query,
        body: callbacks.body,
        deliveries: callbacks.deliveries,
      })
      .from(callbacks)
      .where(eq(callbacks.taskId, taskId))
  ).map((row) => ({ fields: sentFields(row), deliveries: row.deliveries }))
  const bySeq = new Map<string, number[]>()
  for (const row of rows)
    bySeq.set(row.fields.seq as string, [...(bySeq.get(row.fields.seq as string) ?? []), row.deliveries])
  return bySeq
}

/** Every seq answered 200 is one row, delivered once, but the ones sent twice on purpose. */
function expectExactlyOnce(stored: Map<string, number[]>, answered: number, twice: readonly number[]) {
  expect([...stored.keys()].sort((a, b) => Number(a) - Number(b))).toEqual(
    Array.from({ length: answered }, (_, seq) => String(seq)),
  )
  for (const [seq, deliveries] of stored)
    expect(deliveries, `seq ${seq}`).toEqual([twice.includes(Number(seq)) ? 2 : 1])
}

describeOnServer('a PostgreSQL server stopped in the middle of a stream of signed callbacks', () => {
  let cluster: PrivateCluster
  let database: Database
  let gateway: Gateway
  const dir = scratch()

  beforeAll(async () => {
    cluster = await startPrivateCluster()
    database = await openDatabase({ url: cluster.url, dataDir: MEMORY_DATA_DIR, maxConnections: 5 })
    await database.migrate()
    gateway = await startGateway(configWith(dir), { database })
  }, 120_000)

  afterAll(async () => {
    await gateway?.close()
    await database?.close()
    await cluster?.destroy()
  })

  it('answers 200 from the spool while it is down, and once it is back every callback answered 200 is stored ' +
    'exactly once', async () => {
    const taskId = `outage-${randomUUID()}`
    const sent: SignedRequest[] = []
    const answers: Answer[] = []
    const post = async (request: SignedRequest) => answers.push(await send(request))
    const stream = async (from: number, to: number) => {
      for (let seq = from; seq < to; seq += 1) {
        sent[seq] = signFor(gateway, fieldsFor(taskId, seq))
        await post(sent[seq] as SignedRequest)
      }
    }

    await stream(0, 15)
    // The server goes down while callbacks keep coming.
    const stopping = cluster.stop()
    await stream(15, 30)
    await stopping
    await stream(30, 50)
    // Redeliveries on purpose: one kept before the outage, one spooled during it.
    await post(sent[3] as SignedRequest)
    await post(sent[35] as SignedRequest)
    expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 200))
    // In arrival order: from the first callback the server could not take to the last, then the two.
    const spooled = spooledLines(dir).map((line) => Number(line.fields.seq))
    const firstSpooled = spooled[0] as number
    expect(firstSpooled).toBeLessThanOrEqual(30)
    expect(spooled).toEqual([...Array.from({ length: 50 - firstSpooled }, (_, index) => firstSpooled + index), 3, 35])

    await cluster.start()
    await stream(50, 60)
    expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 200))
    await expect.poll(() => spooledLines(dir).length, { timeout: 30_000, interval: 200 }).toBe(0)
    await expect.poll(async () => (await storedOf(database, taskId)).size, { timeout: 30_000, interval: 200 }).toBe(60)
    expectExactlyOnce(await storedOf(database, taskId), 60, [3, 35])
  }, 120_000)
})

describe(`a spool left by a gateway whose database was gone (${driverName})`, () => {
  it('holds every callback answered 200 in order, and a gateway started on a fresh database replays them exactly ' +
    'once', async () => {
    const dir = scratch()
    const taskId = `spooled-${randomUUID()}`
    const first = await openTestDatabase()
    const before = await startGateway(configWith(dir), { database: first.database })
    const requests = Array.from({ length: 20 }, (_, seq) => signFor(before, fieldsFor(taskId, seq)))
    try {
      await first.database.close()
      const answers: Answer[] = []
      for (const request of requests) answers.push(await send(request))
      answers.push(await send(requests[7] as SignedRequest))
      expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 200))
      expect(spooledLines(dir).map((line) => Number(line.fields.seq))).toEqual([...requests.keys(), 7])
    } finally {
      await before.close()
      await first.drop()
    }
    expect(spooledLines(dir)).toHaveLength(21)

    const fresh = await openTestDatabase()
    const after = await startGateway(configWith(dir), { database: fresh.database })
    try {
      await expect.poll(() => spooledLines(dir).length, { timeout: 20_000, interval: 100 }).toBe(0)
      expectExactlyOnce(await storedOf(fresh.database, taskId), 20, [7])
    } finally {
      await after.close()
      await fresh.drop()
    }
  }, 300_000)
})
