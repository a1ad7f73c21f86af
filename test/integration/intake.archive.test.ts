import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { and, eq, sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { resultRows } from '../../src/storage/database.client.js'
import { archiveStatus, recordings } from '../../src/storage/tables/recording.table.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { metricValue, scrapeMetrics } from '../support/metrics.scrape.js'

type Item = Record<string, { S: string } | { N: string }>
const SECRET = 'abc'
const file = (name: string, extra: Item = {}): Item => ({
  file_name: { S: name },
  created_at: { N: '1767225600' },
  user_name: { S: 'ann' },
  access_cnt: { N: '3' },
  ...extra,
})

// issue 41, defect 2: each of these, listed beside a good file, failed the answer's one statement at every poll.
// `kept` is whether the bad item is still a recording (the unstorable value left out), or refused as a file.
const BAD: Record<string, { item: Item; kept: boolean }> = {
  NULNAME: { item: file('nul\u0000name.mp4'), kept: false },
  NULUSER: { item: file('nul-user.mp4', { user_name: { S: 'a\u0000b' } }), kept: true },
  SURROGATE: { item: file('lone-\ud800.mp4'), kept: false },
  VIEWS: { item: file('views.mp4', { access_cnt: { N: String(2 ** 31) } }), kept: true },
  FUTURE: { item: file('future.mp4', { created_at: { N: String(Date.UTC(10_000, 0, 2)) } }), kept: true },
  LONGNAME: { item: file(`${'の'.repeat(1000)}.mp4`), kept: false },
}
// defect 3: an answer far larger than asked (archive.limit 100).
const HUGE = 30_000
const LIMIT = 100

describe(`a list_files answer the catalogue cannot hold whole stops nothing (${driverName})`, {
  timeout: 180_000,
}, () => {
  let db: TestDatabase
  let gateway: Gateway
  let cloud: Server
  const answers = new Map<string, string>()

  beforeAll(async () => {
    for (const [code, bad] of Object.entries(BAD))
      answers.set(code, JSON.stringify({ ret: 0, items: [file(`good-${code}.mp4`), bad.item] }))
    answers.set(
      'HUGE',
      JSON.stringify({ ret: 0, items: Array.from({ length: HUGE }, (_, i) => file(`huge-${i}.mp4`)) }),
    )
    // The cloud of every code: list_files answers as set above, the task list is empty, a webhook is taken.
    cloud = createServer((request, response) => {
      const [, code, , , operation] = (request.url ?? '').split('?')[0]?.split('/') ?? []
      request.resume()
      request.on('end', () => {
        const body =
          operation === 'management'
            ? answers.get(code ?? '')
            : operation === 'task_list'
              ? '{"ret":0,"task_list":[],"user_list":[]}'
              : '{}'
        response.writeHead(200, { 'content-type': 'application/json' }).end(body ?? '{"ret":1}')
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
          services: [...answers.keys()].map((serviceCode) => ({
            serviceCode,
            secrets: [SECRET],
            baseUrl: `${url}/${serviceCode}`,
          })),
          upstream: { pollIntervalMs: 60_000, timeoutMs: 20_000, retries: 0 },
          archive: { pollIntervalMs: 500, limit: LIMIT },
          webhooks: {
            endpoints: [
              {
                name: 'vod',
                url: `${url}/hooks`,
                secret: `whsec_${Buffer.alloc(32, 7).toString('base64')}`,
                serviceCodes: ['*'],
                events: ['recording.*'],
              },
            ],
          },
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

  const status = async (code: string) =>
    (await db.database.db.select().from(archiveStatus).where(eq(archiveStatus.serviceCode, code)))[0]
  const catalogued = async (code: string) =>
    (await db.database.db.select().from(recordings).where(eq(recordings.serviceCode, code))).map((r) => r.fileName)
  const told = async (code: string, fileName: string) =>
    resultRows<{ n: string }>(
      await db.database.db.execute(sql`select count(*) as n from webhook_events where service_code = ${code}
        and type = 'recording.ready' and facts -> 'recording' ->> 'fileName' = ${fileName}`),
    )[0]?.n

  it.each(Object.keys(BAD))(
    '%s: the good file beside it is catalogued and told; the poll succeeds and says what it left out',
    async (code) => {
      await expect.poll(() => catalogued(code), { timeout: 60_000 }).toContain(`good-${code}.mp4`)
      expect(Number(await told(code, `good-${code}.mp4`))).toBe(1)
      const names = await catalogued(code)
      expect(names).toHaveLength(BAD[code]?.kept ? 2 : 1)
      const stored = await status(code)
      expect(stored?.lastSuccessAt).not.toBeNull()
      expect(stored?.lastErrorKind).toBe('INVALID_ANSWER')
      expect(stored?.lastErrorMessage).toMatch(/left out/)
    },
  )

  it('a value left out is null, the rest of its file kept', async () => {
    await expect.poll(() => catalogued('FUTURE'), { timeout: 60_000 }).toContain('future.mp4')
    const [views] = await db.database.db
      .select()
      .from(recordings)
      .where(and(eq(recordings.serviceCode, 'VIEWS'), eq(recordings.fileName, 'views.mp4')))
    expect(views).toMatchObject({ views: null, userName: 'ann' })
    const [user] = await db.database.db
      .select()
      .from(recordings)
      .where(and(eq(recordings.serviceCode, 'NULUSER'), eq(recordings.fileName, 'nul-user.mp4')))
    expect(user).toMatchObject({ userName: null, views: 3 })
  })

  it(`an answer of ${HUGE} files for ${LIMIT} asked keeps the first ${LIMIT}, and says and counts the rest`, async () => {
    await expect.poll(async () => (await catalogued('HUGE')).length, { timeout: 120_000 }).toBe(LIMIT)
    expect((await catalogued('HUGE')).sort()).toEqual(Array.from({ length: LIMIT }, (_, i) => `huge-${i}.mp4`).sort())
    const stored = await status('HUGE')
    expect(stored).toMatchObject({ fileCount: LIMIT, lastErrorKind: 'INVALID_ANSWER' })
    expect(stored?.lastErrorMessage).toContain(`${HUGE} files`)
    const samples = await scrapeMetrics(gateway.url)
    expect(
      metricValue(samples, 'livegate_archive_left_out_total', {
        service_code: 'HUGE',
        what: 'file',
        reason: 'OVER_LIMIT',
      }),
    ).toBeGreaterThanOrEqual(HUGE - LIMIT)
    expect(
      metricValue(samples, 'livegate_archive_left_out_total', { service_code: 'NULNAME', what: 'file', reason: 'NUL' }),
    ).toBeGreaterThanOrEqual(1)
  })
})
