import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { eq } from 'drizzle-orm'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { signCallback } from '../../src/model/callback.sign.js'
import { archiveStatus, recordings } from '../../src/storage/tables/recording.table.js'
import { tasks } from '../../src/storage/tables/graph.table.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { send } from '../support/gateway.fixture.js'
import { metricValue, scrapeMetrics } from '../support/metrics.scrape.js'

// issue 41, "Done when": for random signed callbacks and list_files answers whose values reach every edge (sizes,
// ranges, encodings), the projector and the catalogue never stop, and every other tenant's callbacks are folded.

const SECRET = 'abc'

// Texts at the edges: any UTF-16 unit (NUL, lone surrogates), and names longer than an index entry holds.
const anyUnit = fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code))
const edgeText = fc.oneof(
  fc.string({ unit: anyUnit, maxLength: 12 }),
  fc.constantFrom('', 'ann', '\u0000', 'a\ud800b', '\udc00', '😀'),
  fc.tuple(fc.constantFrom('録', 'é', 'a', '😀'), fc.integer({ min: 250, max: 2000 })).map(([c, n]) => c.repeat(n)),
)
// Numbers as the cloud writes them, at and past every range a column or GraphQL's Int holds.
const edgeNumber = fc.oneof(
  fc.constantFrom(
    ...['0', '-1', '1', '2147483647', '2147483648', '-2147483649', '3000000000', '4294967296', '999999999999999'],
    ...['99999999999999999999', '1e9', '1.5', 'NaN', '', '99999999999', '100000000000', '253402300799999'],
    ...['253402300800001', '-62135596800001', '9007199254740993', '480x800', '999999x999999'],
  ),
  fc.integer().map(String),
)
const edgeValue = fc.oneof(edgeText, edgeNumber)

const CALLBACK_FIELDS = [
  ...['hashed_id', 'username', 'author', 'file_name', 'output_idx', 'size', 'created_at', 'width', 'height'],
  ...['ctype', 'disconnect_reason', 'reach_end', 'status', 'duration', 'input_bytes', 'http_output_bytes'],
  ...['session_duration', 'format', 'url', 'path', 'tag', 'opaque', 'live_only', 'is_resume', 'vs_id'],
] as const
const edgeCallback = fc.record({
  type: fc.constantFrom('0', '1', '2', '8', '9', '15', '2147483648'),
  hashed_id: fc.oneof(fc.constantFrom('p-task', 'p-other'), edgeText),
  username: fc.oneof(fc.constant('ann'), edgeText),
  extra: fc.dictionary(fc.constantFrom(...CALLBACK_FIELDS), edgeValue, { maxKeys: 8 }),
})

const LIST_FIELDS = ['created_at', 'duration', 'width', 'height', 'user_name', 'access_cnt', 'zan_cnt'] as const
const typed = fc.oneof(
  edgeText.map((S) => ({ S })),
  edgeNumber.filter((N) => N.length <= 40).map((N) => ({ N })),
)
const edgeItem = fc.record({
  file_name: fc.oneof(fc.constant('p-task.mp4'), edgeText).map((S) => ({ S })),
  more: fc.dictionary(fc.constantFrom(...LIST_FIELDS, 'description', 'url', 'location'), typed, { maxKeys: 6 }),
})

describe(`the whole intake at every edge never stops, and folds every other tenant (${driverName})`, {
  timeout: 300_000,
}, () => {
  let db: TestDatabase
  let gateway: Gateway
  let cloud: Server
  let answer = '{"ret":0,"items":[]}'

  beforeAll(async () => {
    cloud = createServer((request, response) => {
      const management = (request.url ?? '').split('?')[0]?.endsWith('/management')
      request.resume()
      request.on('end', () => {
        const body = management ? answer : '{"ret":0,"task_list":[],"user_list":[]}'
        response.writeHead(200, { 'content-type': 'application/json' }).end(body)
      })
    })
    await new Promise<void>((resolve) => cloud.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(cloud.address() as AddressInfo).port}`
    db = await openTestDatabase()
    gateway = await startGateway(
      loadConfig({
        env: {},
        value: {
          port: 0,
          log: { level: 'silent' },
          services: [
            { serviceCode: 'EDGE', secrets: [SECRET], baseUrl: url },
            { serviceCode: 'CALM', secrets: [SECRET] },
          ],
          upstream: { pollIntervalMs: 60_000, timeoutMs: 20_000, retries: 0 },
          archive: { pollIntervalMs: 200, limit: 20 },
        },
      }),
      { database: db.database },
    )
  })

  afterAll(async () => {
    await gateway?.close()
    cloud?.closeAllConnections()
    await new Promise((resolve) => cloud?.close(resolve))
    await db?.drop()
  })

  const deliver = async (fields: Record<string, string>) => {
    const signed = signCallback(fields, { url: `${gateway.url}/callbacks`, secret: SECRET, nowMs: Date.now() })
    const answered = await send(signed)
    expect(answered.status, answered.text).toBeLessThan(500)
    return answered
  }

  it('random edge callbacks and list_files answers: each run folds the calm code and catalogues its good file', async () => {
    let run = 0
    await fc.assert(
      fc.asyncProperty(
        fc.array(edgeCallback, { minLength: 1, maxLength: 4 }),
        fc.array(edgeItem, { maxLength: 30 }),
        async (callbacks, items) => {
          run++
          // A good file first (the newest): within archive.limit whatever else the answer holds.
          const good = `good-${run}.mp4`
          const listed = items.map((item) => ({ ...item.more, file_name: item.file_name }))
          answer = JSON.stringify({ ret: 0, items: [{ file_name: { S: good } }, ...listed] })
          for (const callback of callbacks) {
            const { extra, ...fields } = callback
            await deliver({ ...extra, ...fields, service_code: 'EDGE' })
          }
          const calm = `calm-${run}`
          expect((await deliver({ type: '0', service_code: 'CALM', hashed_id: calm, username: 'bo' })).status).toBe(200)
          // The projector never stops: everything acknowledged is folded, the calm code's task with it.
          await gateway.settle()
          const folded = await db.database.db.select().from(tasks).where(eq(tasks.taskId, calm))
          expect(folded).toHaveLength(1)
          // The catalogue never stops: this run's answer is stored, its good file with it.
          await expect
            .poll(
              async () =>
                (
                  await db.database.db
                    .select({ fileName: recordings.fileName })
                    .from(recordings)
                    .where(eq(recordings.fileName, good))
                ).length,
              { timeout: 30_000 },
            )
            .toBe(1)
          const [status] = await db.database.db
            .select()
            .from(archiveStatus)
            .where(eq(archiveStatus.serviceCode, 'EDGE'))
          expect(status?.consecutiveFailures).toBe(0)
        },
      ),
      { numRuns: 12, interruptAfterTimeLimit: 150_000, markInterruptAsFailure: false },
    )
    expect(run).toBeGreaterThan(0)
    // Nothing reached the projector that the verdict should have kept from it.
    const samples = await scrapeMetrics(gateway.url)
    expect(metricValue(samples, 'livegate_projector_set_aside_total')).toBe(0)
  })
})
