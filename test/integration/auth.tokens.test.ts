import { createHmac } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { toGlobalId } from '../../src/adapters/graphql/global.id.js'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { freePort } from '../support/free.port.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { deliverTo, TEST_CONFIG } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'
import {
  connectWith,
  ISSUER,
  JwksServer,
  part,
  type ProviderKey,
  providerKey,
  signToken,
} from '../support/jwks.server.js'
import { scrapeMetrics } from '../support/metrics.scrape.js'
import { WEBHOOK_SECRET } from '../support/receiver.process.js'
import { overSocket } from '../support/socket.execute.js'
import { settle, subscribe } from '../support/subscription.client.js'

// Signed tokens from a provider of the test's own (a real HTTP server answering its JWKS), beside
// an API key, over HTTP and graphql-ws alike: one gateway, started while the provider is down.

const KEY = 'operators-key'
const CLAIMS = { sub: 'u_8812', name: 'Mei Chen', livegate: { serviceCodes: ['TESTING'], can: ['operate'] } }
const QUERY = '{ tasks { totalCount } }'
const NOTIFICATIONS = `subscription($filter: NotificationFilter, $after: String) {
  notificationReceived(filter: $filter, after: $after) { kind cursor }
}`
interface Received {
  notificationReceived: { kind: string; cursor: string }
}

describe(`signed tokens beside API keys (${driverName})`, () => {
  let db: TestDatabase
  let gateway: Gateway
  let jwks: JwksServer
  let first: ProviderKey
  const lines: string[] = []

  beforeAll(async () => {
    db = await openTestDatabase()
    jwks = new JwksServer(await freePort())
    first = await providerKey('k1')
    jwks.keys.push(first)
    const config = loadConfig({
      env: {},
      value: {
        ...TEST_CONFIG,
        log: { level: 'info', format: 'json' },
        apiKeys: [{ name: 'ops', key: KEY, serviceCodes: ['*'] }],
        auth: { jwt: { jwksUrl: jwks.url, issuer: ISSUER, audience: 'livegate' } },
        // An endpoint of the token's code to replay to and switch; nothing listens at its address.
        webhooks: {
          endpoints: [
            {
              name: 'hook',
              url: `http://127.0.0.1:${await freePort()}/hook`,
              secret: WEBHOOK_SECRET,
              serviceCodes: ['TESTING'],
            },
          ],
        },
      },
    })
    const logStream = { write: (line: string) => void lines.push(line) }
    // The provider is down: the gateway starts all the same.
    gateway = await startGateway(config, { database: db.database, logStream })
  }, 300_000)

  afterAll(async () => {
    await gateway?.close()
    await jwks?.down()
    await db?.drop()
  })

  const bearer = (value: string) => ({ headers: { authorization: `Bearer ${value}` } })

  it('starts with the JWKS down: keys work, tokens are refused (keys unavailable) and logged; then up, accepted', async () => {
    expect(lines.join('')).toContain('could not be fetched')
    const keyed = await graphql(gateway, QUERY, {}, bearer(KEY))
    expect(keyed.errors, keyed.text).toBeUndefined()
    const token = await signToken({ key: first, claims: CLAIMS })
    const refused = await graphql(gateway, QUERY, {}, bearer(token))
    expect(refused.status).toBe(401)
    expect(refused.errors?.[0]?.extensions).toMatchObject({ code: 'UNAUTHENTICATED', reason: 'keys unavailable' })
    await jwks.up()
    await expect.poll(async () => (await graphql(gateway, QUERY, {}, bearer(token))).status).toBe(200)
    const socket = await overSocket(gateway.url, QUERY, {}, token)
    expect(socket.errors).toBeUndefined()
    expect(socket.data).toEqual({ tasks: { totalCount: 0 } })
  })

  it('refuses each bad token with its reason, over HTTP (401) and graphql-ws (4401), never echoing it', async () => {
    const good = await signToken({ key: first, claims: CLAIMS })
    const [header, , signature] = good.split('.')
    const payload = { ...CLAIMS, livegate: { serviceCodes: ['*'], can: ['operate'] }, iss: ISSUER, aud: 'livegate' }
    const exp = Math.floor(Date.now() / 1000) + 600
    const hmacHeader = part({ alg: 'HS256', kid: 'k1', typ: 'JWT' })
    const hmacBody = part({ ...payload, exp })
    const hmacSignature = createHmac('sha256', first.pem).update(`${hmacHeader}.${hmacBody}`).digest('base64url')
    const bad: Array<[string, string]> = [
      ['expired', await signToken({ key: first, claims: CLAIMS, expiresIn: -120 })],
      ['not yet valid', await signToken({ key: first, claims: CLAIMS, notBefore: 300 })],
      ['wrong issuer', await signToken({ key: first, claims: CLAIMS, issuer: 'https://evil.test/' })],
      ['wrong audience', await signToken({ key: first, claims: CLAIMS, audience: 'someone-else' })],
      ['bad signature', `${header}.${part({ ...payload, exp })}.${signature}`],
      ['algorithm not allowed', `${part({ alg: 'none', typ: 'JWT' })}.${part({ ...payload, exp })}.`],
      ['algorithm not allowed', `${hmacHeader}.${hmacBody}.${hmacSignature}`],
      ['too large', await signToken({ key: first, claims: { ...CLAIMS, padding: 'x'.repeat(9 * 1024) } })],
      ['bad claims', await signToken({ key: first, claims: { sub: 'u_1', livegate: { serviceCodes: 'TESTING' } } })],
      ['unknown key', 'not-a-key'],
    ]
    for (const [reason, token] of bad) {
      const answer = await graphql(gateway, QUERY, {}, bearer(token))
      expect(answer.status, `${reason}: ${answer.text}`).toBe(401)
      expect(answer.errors?.[0]?.extensions, reason).toMatchObject({ code: 'UNAUTHENTICATED', reason })
      expect(answer.data ?? null).toBeNull()
      expect(answer.text).not.toContain(token.slice(-20))
      const socket = await connectWith(gateway.url, `Bearer ${token}`)
      expect(socket, reason).toEqual({ code: 4401, reason: `Unauthorized: ${reason}` })
    }
    const logged = lines.join('')
    expect(logged).toContain('"reason":"expired"')
    expect(logged).toContain('"sub":"u_8812"')
    for (const [, token] of bad) expect(logged).not.toContain(token.slice(-20))
  })

  it('accepts a key the provider rotates in, with no restart (the JWKS fetched again for its unknown kid)', async () => {
    const second = await providerKey('k2')
    const token = await signToken({ key: second, claims: CLAIMS })
    const before = await graphql(gateway, QUERY, {}, bearer(token))
    expect(before.errors?.[0]?.extensions?.reason).toBe('unknown signing key')
    jwks.keys.push(second)
    // jose fetches the JWKS again for an unknown kid once its cooldown (5 s) has passed.
    await expect.poll(async () => (await graphql(gateway, QUERY, {}, bearer(token))).status).toBe(200)
    expect(await connectWith(gateway.url, `Bearer ${token}`)).toEqual({ code: 0, reason: 'acknowledged' })
  })

  it('answers Query.viewer for a token (its claims) and for a key (its name)', async () => {
    const VIEWER = '{ viewer { method subject name issuer serviceCodes can userName expiresAt keyName canOperate } }'
    const claims = { ...CLAIMS, livegate: { serviceCodes: ['TESTING'], can: ['operate'], userName: 'anchor_07' } }
    const token = await signToken({ key: first, claims, expiresIn: 600 })
    const { exp } = JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString()) as { exp: number }
    const asToken = await graphql(gateway, VIEWER, {}, bearer(token))
    expect(asToken.data?.viewer).toEqual({
      method: 'TOKEN',
      subject: 'u_8812',
      name: 'Mei Chen',
      issuer: ISSUER,
      serviceCodes: ['TESTING'],
      can: ['operate'],
      userName: 'anchor_07',
      expiresAt: new Date(exp * 1000).toISOString(),
      keyName: null,
      canOperate: true,
    })
    const asKey = await graphql(gateway, VIEWER, {}, bearer(KEY))
    expect(asKey.data?.viewer).toMatchObject({ method: 'KEY', subject: 'ops', name: null, serviceCodes: null })
    expect((await overSocket(gateway.url, VIEWER, {}, token)).data?.viewer).toMatchObject({ subject: 'u_8812' })
  })

  it("names the token's subject in the audit (requestedBy), never null", async () => {
    const reader = await signToken({ key: first, claims: { ...CLAIMS, livegate: { serviceCodes: ['TESTING'] } } })
    const id = toGlobalId('Task', 'TESTING', 'some-task')
    const stop = await graphql(
      gateway,
      'mutation($id: ID!) { stopTask(id: $id) { action { id } } }',
      { id },
      bearer(reader),
    )
    expect(stop.errors?.[0]?.extensions?.code, stop.text).toBe('FORBIDDEN')
    const audit = await graphql(gateway, '{ actions { edges { node { kind requestedBy refusal } } } }', {}, bearer(KEY))
    expect(audit.data?.actions.edges.map((edge: { node: unknown }) => edge.node)).toContainEqual({
      kind: 'STOP_TASK',
      requestedBy: 'u_8812 (Mei Chen)',
      refusal: 'FORBIDDEN',
    })
  })

  it("names the token's subject in a replay's and a switch's audit rows", async () => {
    const operator = await signToken({ key: first, claims: CLAIMS })
    const replay = 'mutation { redeliverWebhooks(endpoint: "hook", since: "2020-01-01T00:00:00Z") }'
    const answered = await graphql(gateway, replay, {}, bearer(operator))
    expect(answered.errors, answered.text).toBeUndefined()
    const change = 'mutation($on: Boolean!) { setWebhookEndpointEnabled(endpoint: "hook", enabled: $on) { enabled } }'
    for (const on of [false, true]) {
      const switched = await graphql(gateway, change, { on }, bearer(operator))
      expect(switched.data?.setWebhookEndpointEnabled, switched.text).toEqual({ enabled: on })
    }
    const audit = await graphql(
      gateway,
      '{ actions(first: 20) { edges { node { kind endpoint requestedBy } } } }',
      {},
      bearer(KEY),
    )
    const rows = audit.data?.actions.edges.map((edge: { node: unknown }) => edge.node)
    for (const kind of ['REPLAY_WEBHOOKS', 'DISABLE_WEBHOOK_ENDPOINT', 'ENABLE_WEBHOOK_ENDPOINT'])
      expect(rows).toContainEqual({ kind, endpoint: 'hook', requestedBy: 'u_8812 (Mei Chen)' })
  })

  it('closes a socket 4401 when its token expires; back with a fresh token, it resumes from its cursor missing nothing', async () => {
    const taskId = 'expiring-task'
    const samples = sampleCallbacks(taskId, 'TESTING')
    const filter = { taskIds: [taskId] }
    const short = await signToken({ key: first, claims: CLAIMS, expiresIn: 8 })
    const before = subscribe<Received>(gateway.url, NOTIFICATIONS, { filter }, { authorization: `Bearer ${short}` })
    await settle()
    expect((await deliverTo(gateway, samples.liveStart as Record<string, string>)).status).toBe(200)
    const [seen] = await before.waitFor(1, 60_000)
    expect(await before.closed).toBe(4401)
    // Sent while the client signs in again.
    for (const fields of [samples.thumbnail, samples.liveResume])
      expect((await deliverTo(gateway, fields as Record<string, string>)).status).toBe(200)
    const fresh = await signToken({ key: first, claims: CLAIMS })
    const after = seen?.notificationReceived.cursor
    const resumed = subscribe<Received>(
      gateway.url,
      NOTIFICATIONS,
      { filter, after },
      { authorization: `Bearer ${fresh}` },
    )
    try {
      const events = await resumed.waitFor(2, 60_000)
      expect(events.map((event) => event.notificationReceived.kind)).toEqual(['THUMBNAIL', 'LIVE_RESUME'])
    } finally {
      await resumed.dispose()
      await before.dispose()
    }
  })

  it('scopes a token by its claims, and counts callers by method and outcome', async () => {
    const other = await signToken({ key: first, claims: { ...CLAIMS, livegate: { serviceCodes: ['OPEN'] } } })
    const answer = await graphql(
      gateway,
      '{ tasks(filter: { serviceCode: "TESTING" }) { totalCount } }',
      {},
      bearer(other),
    )
    expect(answer.errors, answer.text).toBeUndefined()
    const samples = await scrapeMetrics(gateway.url)
    const count = (method: string, outcome: string) =>
      samples.find(
        (s) => s.name === 'livegate_auth_total' && s.labels.method === method && s.labels.outcome === outcome,
      )?.value ?? 0
    expect(count('token', 'accepted')).toBeGreaterThan(0)
    expect(count('key', 'accepted')).toBeGreaterThan(0)
    expect(count('token', 'expired')).toBe(2)
  })
})
