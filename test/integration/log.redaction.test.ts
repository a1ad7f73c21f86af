import { randomBytes, randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { sql } from 'drizzle-orm'
import { createClient } from 'graphql-ws'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import WebSocket from 'ws'
import { loadConfig } from '../../src/config/index.js'
import { type Database, openDatabase } from '../../src/storage/database.client.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { send, signFor, TEST_CONFIG } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'

// Long random values: any occurrence in the log is a leak, never a coincidence.
const secret = (label: string) => `${label}-${randomBytes(12).toString('hex')}`
const SERVICE_SECRET = secret('service')
const API_KEY = secret('apikey')
const SOCKET_KEY = secret('socketkey')
const DB_PASSWORD = secret('dbpw')

describe(`no secret reaches a log line (${driverName})`, () => {
  let testDb: TestDatabase
  // On a server, the gateway connects through a URL that carries the password (the test server
  // trusts local connections, so any password is accepted); on PGlite it is only configured.
  let database: Database
  let gateway: Gateway
  let spoolDir: string
  const lines: string[] = []

  beforeAll(async () => {
    testDb = await openTestDatabase()
    spoolDir = await mkdtemp(join(tmpdir(), 'livegate-redaction-'))
    let url = `postgres://livegate:${DB_PASSWORD}@db.invalid:5432/livegate`
    if (testDb.url) {
      const withPassword = new URL(testDb.url)
      withPassword.password = DB_PASSWORD
      url = withPassword.toString()
      database = await openDatabase({ url, dataDir: 'memory://', maxConnections: 2 })
    } else {
      database = testDb.database
    }
    const config = loadConfig({
      env: { DATABASE_URL: url },
      value: {
        ...TEST_CONFIG,
        log: { level: 'trace' },
        // The spooled callback of the fault below must not outlive the test.
        database: { dataDir: 'memory://' },
        spool: { dir: spoolDir },
        services: [{ serviceCode: 'TESTING', secrets: [SERVICE_SECRET] }],
        apiKeys: [{ name: 'ops', key: API_KEY, serviceCodes: ['*'] }],
      },
    })
    const logStream = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk))
        done()
      },
    })
    gateway = await startGateway({ ...config, port: 0, host: '127.0.0.1' }, { database, logStream })
  })

  afterAll(async () => {
    await gateway?.close()
    if (database !== testDb?.database) await database?.close()
    await testDb?.drop()
    if (spoolDir) await rm(spoolDir, { recursive: true, force: true })
  })

  const keyHeaders = { authorization: `Bearer ${API_KEY}`, 'x-api-key': API_KEY }
  const signed = (prefix: 'svc' | 'xvs', method: 'GET' | 'POST' = 'POST') => {
    const request = signFor(gateway, sampleCallbacks(randomUUID()).liveStart as Record<string, string>, {
      secret: SERVICE_SECRET,
      headerPrefix: prefix,
      method,
    })
    return {
      request: { ...request, headers: { ...request.headers, ...keyHeaders } },
      signature: request.headers[`${prefix}-signature`] as string,
    }
  }

  test(
    'requests with keys and signatures, a socket with a key, then a database fault: all logged, none of them ' +
      'revealed',
    async () => {
      const signatures: string[] = []
      const deliver = async (prefix: 'svc' | 'xvs', method: 'GET' | 'POST' = 'POST') => {
        const { request, signature } = signed(prefix, method)
        signatures.push(signature)
        return send(request)
      }

      expect((await deliver('svc')).status).toBe(200)
      expect((await deliver('xvs', 'GET')).status).toBe(200)
      const forged = signed('svc')
      const wrong = forged.signature.replace(/^./, (c) => (c === 'a' ? 'b' : 'a'))
      signatures.push(wrong)
      expect(
        (await send({ ...forged.request, headers: { ...forged.request.headers, 'svc-signature': wrong } })).status,
      ).toBe(401)
      expect(
        (await graphql(gateway, 'query Keyed { notifications(first: 1) { totalCount } }', {}, { headers: keyHeaders }))
          .status,
      ).toBe(200)
      expect(
        (
          await graphql(
            gateway,
            '{ notifications(first: 1) { totalCount } }',
            {},
            { headers: { authorization: `Bearer ${SOCKET_KEY}` } },
          )
        ).status,
      ).toBe(401)
      expect((await send({ method: 'GET', url: `${gateway.url}/nowhere`, headers: keyHeaders })).status).toBe(404)

      // graphql-ws: a key in connection_init's payload, once wrong (closed 4401) and once right.
      for (const authorization of [`Bearer ${SOCKET_KEY}`, `Bearer ${API_KEY}`]) {
        const client = createClient({
          url: `${gateway.url.replace(/^http/, 'ws')}/graphql`,
          webSocketImpl: WebSocket,
          retryAttempts: 0,
          lazy: true,
          connectionParams: { authorization },
        })
        await new Promise<void>((resolve) => {
          client.subscribe(
            { query: 'subscription { taskChanged { id } }' },
            { next: () => {}, error: () => resolve(), complete: () => resolve() },
          )
          setTimeout(resolve, 500)
        })
        await client.dispose()
      }

      // A statement that fails while carrying the callback's headers, signature included, as
      // bound values: the database refuses every new callback row.
      await database.db.execute(
        sql`alter table callbacks add constraint redaction_test_refuses check (false) not valid`,
      )
      // Spooled (200) while the spool can take it, else refused (503): either way the fault is logged.
      expect([200, 503]).toContain((await deliver('svc')).status)
      // Then the database goes away altogether.
      await database.close()
      expect([200, 503]).toContain((await deliver('xvs')).status)
      expect(
        (
          await graphql(
            gateway,
            'query AfterFault { notifications(first: 1) { totalCount } }',
            {},
            { headers: keyHeaders },
          )
        ).status,
      ).toBe(200)
      expect((await send({ method: 'GET', url: `${gateway.url}/readyz`, headers: keyHeaders })).status).toBe(503)

      // A postgres.js error that does carry the connection URL: the one for an unreadable URL.
      let urlError: unknown
      try {
        postgres(`postgres://livegate:${DB_PASSWORD}@[not-a-host/livegate`)
      } catch (error) {
        urlError = error
      }
      expect((urlError as { input?: string }).input).toContain(DB_PASSWORD)
      gateway.server.log.error({ err: urlError }, 'database could not be opened')
      // And what a careless later change might log: the settings, a payload, a message with the URL.
      gateway.server.log.warn(
        {
          connectionParams: { authorization: `Bearer ${SOCKET_KEY}` },
          headers: keyHeaders,
          database: { url: `postgres://u:${DB_PASSWORD}@h/db` },
        },
        `retrying postgres://u:${DB_PASSWORD}@h/db with key ${API_KEY} and secret ${SERVICE_SECRET}`,
      )

      const log = lines.join('')
      const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>)
      for (const value of [
        ...signatures,
        SERVICE_SECRET,
        API_KEY,
        SOCKET_KEY,
        DB_PASSWORD,
        encodeURIComponent(DB_PASSWORD),
      ]) {
        expect(log.includes(value), `a secret in the log: ${value.slice(0, 12)}…`).toBe(false)
      }
      expect(log).toContain('[Redacted]')
      // The fault was logged, as a usable error: the statement is there, its values are not.
      const kept = entries.find(
        (entry) =>
          /could not keep a callback|callback spooled/.test(String(entry.msg)) &&
          /insert into/i.test(JSON.stringify(entry.err)),
      )
      expect(kept, 'the storage fault is logged').toBeDefined()
      const faultMessage = String((kept?.err as { message?: unknown } | undefined)?.message)
      expect(faultMessage).toMatch(/^Failed query: insert into "callbacks"/)
      expect(faultMessage).toContain('\nparams: [Redacted]')
      expect(entries.some((entry) => entry.msg === 'not ready: the database does not answer')).toBe(true)
      expect(entries.find((entry) => entry.msg === 'database could not be opened')?.err).toMatchObject({
        code: 'ERR_INVALID_URL',
        input: 'postgres://livegate:[Redacted]@[not-a-host/livegate',
      })
    },
  )
})
