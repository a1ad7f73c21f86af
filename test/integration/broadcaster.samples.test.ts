import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { SECRET, TEST_CONFIG } from '../support/gateway.fixture.js'
import { ISSUER, providerKey, signToken } from '../support/jwks.server.js'
import { subscribe } from '../support/subscription.client.js'

// Issue 42, section 2, for `metricsSampled`: its samples come from the cloud's task list, not from
// callbacks, so a cloud of the test's own lists one live of the broadcaster's and one of another
// user's. A key with `userName` and a token naming the user receive only the broadcaster's.
const CODE = 'TENANT_A'
const MEI = 'anchor_07'
const LIVES = { 'mei-live': MEI, 'other-live': 'anchor_99' }
const KEYS = { mei: 'key-of-mei', ops: 'key-of-operators' }
const SAMPLED = 'subscription { metricsSampled { viewers task { taskId } } }'
interface Sampled {
  metricsSampled: { viewers: number; task: { taskId: string } }
}

/** The cloud's task_list: both lives, their bytes growing with each answer. */
function startCloud(): Promise<Server> {
  let bytes = 1000
  const server = createServer((_request, response) => {
    bytes += 100_000
    const task_list = Object.entries(LIVES).map(([id, user]) => ({
      id,
      vs_id: 'xvs-1',
      input_bytes: bytes,
      inputs: [{ user_name: user, device_type: 2, url: '' }],
      outputs: [{ tag: 'hd', format: 'flv', http_connections_num: 5, http_output_bytes: bytes, streams: [] }],
    }))
    response.setHeader('content-type', 'application/json')
    response.end(JSON.stringify({ ret: 0, task_list, user_list: [] }))
  })
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)))
}

describe(`metricsSampled under a broadcaster's key and token (${driverName})`, () => {
  let db: TestDatabase
  let cloud: Server
  let gateway: Gateway
  let token: string

  beforeAll(async () => {
    db = await openTestDatabase()
    cloud = await startCloud()
    const provider = await providerKey('k1')
    const claims = { sub: 'u_8812', name: 'Mei Chen', livegate: { serviceCodes: [CODE], userName: MEI } }
    token = await signToken({ key: provider, claims, expiresIn: 3600 })
    const config = loadConfig({
      env: {},
      value: {
        ...TEST_CONFIG,
        services: [
          {
            serviceCode: CODE,
            secrets: [SECRET],
            baseUrl: `http://127.0.0.1:${(cloud.address() as AddressInfo).port}`,
          },
        ],
        upstream: { pollIntervalMs: 250, timeoutMs: 2000, maxBackoffMs: 1000 },
        apiKeys: [
          { name: 'mei', key: KEYS.mei, serviceCodes: [CODE], userName: MEI },
          { name: 'ops', key: KEYS.ops, serviceCodes: ['*'] },
        ],
        auth: { jwt: { keys: [provider.jwk], issuer: ISSUER, audience: 'livegate' } },
      },
    })
    gateway = await startGateway(config, { database: db.database })
  }, 300_000)

  afterAll(async () => {
    await gateway?.close()
    await new Promise((resolve) => cloud?.close(resolve))
    await db?.drop()
  })

  it("pushes the broadcaster's samples only, to the key and the token alike", async () => {
    const as = (secret: string) => subscribe<Sampled>(gateway.url, SAMPLED, {}, { authorization: `Bearer ${secret}` })
    const streams = { key: as(KEYS.mei), token: as(token), operator: as(KEYS.ops) }
    const seen = (of: keyof typeof streams) => new Set(streams[of].events.map((e) => e.metricsSampled.task.taskId))
    try {
      // Both lives reach the operator several times: the broadcaster's streams have had their chances too.
      await expect
        .poll(() => streams.operator.events.length >= 6 && seen('operator').size === 2, { timeout: 60_000 })
        .toBe(true)
      await expect.poll(() => streams.key.events.length > 1 && streams.token.events.length > 1).toBe(true)
      for (const of of ['key', 'token'] as const) {
        expect(streams[of].errors, of).toEqual([])
        expect(seen(of), of).toEqual(new Set(['mei-live']))
      }
    } finally {
      for (const stream of Object.values(streams)) await stream.dispose()
    }
  })
})
