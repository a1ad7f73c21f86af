import { randomUUID } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { describe, expect } from 'vitest'
import { sentFields } from '../../src/model/callback.record.js'
import { callbacks } from '../../src/storage/tables/callback.table.js'
import { refusals } from '../../src/storage/tables/refusal.table.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName } from '../support/database.fixture.js'
import { type GatewayFixtures, ROTATED_SECRET, send, signFor, test } from '../support/gateway.fixture.js'

const taskId = () => `task-${randomUUID()}`
const rowsOf = (fixtures: Pick<GatewayFixtures, 'db'>, id: string) =>
  fixtures.db.database.db.select().from(callbacks).where(eq(callbacks.taskId, id)).orderBy(callbacks.id)

describe(`callbacks over HTTP on ${driverName}`, () => {
  for (const method of ['POST', 'GET'] as const) {
    test(`every published type, sent by ${method}, is answered {"ret":0} and stored as sent`, async ({
      deliver,
      db,
    }) => {
      const id = taskId()
      const samples = sampleCallbacks(id)
      // Type 8 names no task; give it one here so the rows can be found together.
      const sent = Object.values(samples).map((fields) => (fields.type === '8' ? { ...fields, hashed_id: id } : fields))
      for (const fields of sent) {
        const answer = await deliver(fields, { method })
        expect(answer.status, answer.text).toBe(200)
        expect(answer.text).toBe('{"ret":0}')
      }
      const rows = await rowsOf({ db }, id)
      expect(rows.map((row) => row.type)).toEqual([0, 1, 2, 9, 8, 15])
      for (const [index, row] of rows.entries()) {
        expect(row).toMatchObject({
          serviceCode: 'TESTING',
          method,
          path: '/callbacks',
          signature: 'verified',
          signatureError: null,
          deliveries: 1,
        })
        expect({ ...sentFields(row) }).toEqual(sent[index])
        expect(row.headers['svc-signature']).toMatch(/^[0-9a-f]{64}$/)
        expect(row.headers['user-agent']).toBeTypeOf('string')
      }
      const start = rows[0]
      expect(start).toMatchObject({ userName: 'alice', vsId: 'xvs-5', serviceCreatedAt: new Date(1444701446 * 1000) })
      if (method === 'POST') expect(start?.body.toString()).toBe(new URLSearchParams(sent[0]).toString())
      else expect(start?.query).toBe(new URLSearchParams(sent[0]).toString())
    })
  }

  test('a path below /callbacks and the xvs header spelling work alike', async ({ deliver, db }) => {
    const id = taskId()
    const answer = await deliver(sampleCallbacks(id).liveStart as Record<string, string>, {
      path: '/callbacks/live-start',
      headerPrefix: 'xvs',
    })
    expect(answer.status, answer.text).toBe(200)
    const [row] = await rowsOf({ db }, id)
    expect(row).toMatchObject({ path: '/callbacks/live-start', signature: 'verified' })
  })

  test('the same callback delivered again is answered 200 and kept once, with the deliveries counted', async ({
    gateway,
    db,
  }) => {
    const id = taskId()
    const request = signFor(gateway, sampleCallbacks(id).liveEnd as Record<string, string>)
    const answers = await Promise.all([send(request), send(request), send(request)])
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200])
    const rows = await rowsOf({ db }, id)
    expect(rows).toHaveLength(1)
    expect(rows[0]?.deliveries).toBe(3)
  })

  test('two genuine events with equal fields but their own signed timestamps are two rows', async ({ deliver, db }) => {
    const id = taskId()
    const fields = sampleCallbacks(id).liveResume as Record<string, string>
    await deliver(fields, { nowMs: Date.now() - 1000 })
    await deliver(fields, { nowMs: Date.now() })
    expect(await rowsOf({ db }, id)).toHaveLength(2)
  })

  test('an unknown type and unknown fields are kept', async ({ deliver, db }) => {
    const id = taskId()
    const answer = await deliver({ type: '3', service_code: 'TESTING', hashed_id: id, file_name: 'seg-0.ts', seq: '0' })
    expect(answer.status, answer.text).toBe(200)
    const [row] = await rowsOf({ db }, id)
    expect(row).toMatchObject({ type: 3, values: {} })
    expect(sentFields(row as NonNullable<typeof row>)).toMatchObject({ seq: '0', file_name: 'seg-0.ts' })
  })

  test('a rotating service accepts either secret', async ({ deliver }) => {
    const fields = { ...sampleCallbacks(taskId(), 'ROTATING').liveStart } as Record<string, string>
    expect((await deliver(fields, { secret: ROTATED_SECRET })).status).toBe(200)
    expect((await deliver({ ...fields, tag: 'other' }, { secret: 'abc' })).status).toBe(200)
  })

  test('verify "log" keeps a badly signed callback and marks it; verify "off" skips the check', async ({
    deliver,
    gateway,
    db,
  }) => {
    const logged = taskId()
    expect(
      (await deliver(sampleCallbacks(logged, 'LOGONLY').liveStart as Record<string, string>, { secret: 'wrong' }))
        .status,
    ).toBe(200)
    expect((await rowsOf({ db }, logged))[0]).toMatchObject({
      signature: 'failed',
      signatureError: 'SIGNATURE_INVALID',
    })

    const open = taskId()
    const unsigned = await send({
      method: 'POST',
      url: `${gateway.url}/callbacks`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(sampleCallbacks(open, 'OPEN').liveStart).toString(),
    })
    expect(unsigned.status, unsigned.text).toBe(200)
    expect((await rowsOf({ db }, open))[0]).toMatchObject({ signature: 'skipped', signatureError: null })
  })
})

describe(`refusals on ${driverName}`, () => {
  const refusalsFor = (fixtures: Pick<GatewayFixtures, 'db'>, marker: string) =>
    fixtures.db.database.db
      .select()
      .from(refusals)
      .where(eq(refusals.path, `/callbacks/${marker}`))

  const cases: Array<{
    name: string
    status: number
    code: string
    ret: number
    request: (fixtures: GatewayFixtures, path: string) => ReturnType<typeof send>
    fields?: string[]
  }> = [
    {
      name: 'a missing signature',
      status: 401,
      code: 'SIGNATURE_MISSING',
      ret: 40101,
      request: ({ gateway }, path) =>
        send({
          method: 'POST',
          url: `${gateway.url}${path}`,
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'type=0&service_code=TESTING&hashed_id=x',
        }),
    },
    {
      name: 'a bad signature',
      status: 401,
      code: 'SIGNATURE_INVALID',
      ret: 40102,
      request: ({ deliver }, path) =>
        deliver({ type: '0', service_code: 'TESTING', hashed_id: 'x' }, { path, secret: 'not-the-secret' }),
    },
    {
      name: 'a stale timestamp',
      status: 401,
      code: 'TIMESTAMP_STALE',
      ret: 40105,
      request: ({ deliver }, path) =>
        deliver({ type: '0', service_code: 'TESTING', hashed_id: 'x' }, { path, nowMs: Date.now() - 301_000 }),
    },
    {
      name: 'a timestamp in seconds',
      status: 401,
      code: 'TIMESTAMP_INVALID',
      ret: 40104,
      request: ({ deliver }, path) =>
        deliver({ type: '0', service_code: 'TESTING', hashed_id: 'x' }, { path, nowMs: Math.floor(Date.now() / 1000) }),
    },
    {
      name: 'an unknown service code',
      status: 403,
      code: 'UNKNOWN_SERVICE',
      ret: 40301,
      request: ({ deliver }, path) => deliver({ type: '0', service_code: 'NOBODY', hashed_id: 'x' }, { path }),
    },
    {
      name: 'a known type missing required fields',
      status: 400,
      code: 'MISSING_FIELDS',
      ret: 40002,
      fields: ['hashed_id', 'reach_end'],
      request: ({ deliver }, path) => deliver({ type: '1', service_code: 'TESTING' }, { path }),
    },
    {
      name: 'a missing service code',
      status: 400,
      code: 'MISSING_FIELDS',
      ret: 40002,
      fields: ['service_code'],
      request: ({ deliver }, path) => deliver({ type: '0', hashed_id: 'x' }, { path }),
    },
    {
      name: 'an unsupported content type',
      status: 415,
      code: 'UNSUPPORTED_MEDIA_TYPE',
      ret: 41501,
      request: ({ gateway }, path) =>
        send({
          method: 'POST',
          url: `${gateway.url}${path}`,
          headers: { 'content-type': 'application/json' },
          body: '{"type":0}',
        }),
    },
    {
      name: 'another method',
      status: 405,
      code: 'METHOD_NOT_ALLOWED',
      ret: 40501,
      request: ({ gateway }, path) =>
        send({ method: 'PUT', url: `${gateway.url}${path}?type=0`, headers: {}, body: 'x' }),
    },
  ]

  for (const c of cases) {
    test(`${c.name}: ${c.status} ${c.code}, recorded with its reason`, async ({ db, gateway, deliver }) => {
      const fixtures = { db, gateway, deliver }
      const marker = randomUUID()
      const answer = await c.request(fixtures, `/callbacks/${marker}`)
      expect(answer.status, answer.text).toBe(c.status)
      expect(answer.body).toMatchObject({ ret: c.ret, code: c.code, message: expect.any(String) })
      if (c.fields) expect(answer.body.fields).toEqual(c.fields)
      expect(answer.text).not.toMatch(/at .*\.ts:\d+/)
      const recorded = await refusalsFor(fixtures, marker)
      expect(recorded).toHaveLength(1)
      expect(recorded[0]).toMatchObject({ reason: c.code })
    })
  }

  test('a body over the limit is answered 413 and not recorded', async ({ gateway, db }) => {
    const marker = randomUUID()
    const answer = await send({
      method: 'POST',
      url: `${gateway.url}/callbacks/${marker}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `type=0&x=${'a'.repeat(70 * 1024)}`,
    })
    expect(answer.status).toBe(413)
    expect(answer.body).toMatchObject({ ret: 41301, code: 'PAYLOAD_TOO_LARGE' })
    expect(await refusalsFor({ db }, marker)).toHaveLength(0)
  })

  test('a refused body is kept capped, with its real size', async ({ gateway, db }) => {
    const marker = randomUUID()
    const body = `type=0&service_code=NOBODY&x=${'a'.repeat(20_000)}`
    await send({
      method: 'POST',
      url: `${gateway.url}/callbacks/${marker}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body,
    })
    const [row] = await refusalsFor({ db }, marker)
    expect(row?.body.length).toBe(8192)
    expect(row?.bodySize).toBe(body.length)
    expect(row?.body.toString()).toBe(body.slice(0, 8192))
  })

  test('other addresses answer a JSON 404 from the same catalogue', async ({ gateway }) => {
    const answer = await send({ method: 'GET', url: `${gateway.url}/nowhere` })
    expect(answer).toMatchObject({ status: 404, body: { code: 'NOT_FOUND', ret: 40401 } })
  })
})
