import { test as base } from 'vitest'
import { type SignedRequest, signCallback } from '../../src/model/callback.sign.js'
import { openTestDatabase, type TestDatabase } from './database.fixture.js'
import { startTestGateway, type TestGateway } from './gateway.mode.js'

/** The secrets the test configuration gives its services. */
export const SECRET = 'abc'
export const ROTATED_SECRET = 'def-new'

/** The configuration file every integration gateway starts with, on a free port. */
export const TEST_CONFIG = {
  port: 0,
  host: '127.0.0.1',
  log: { level: 'silent' },
  // Small replay pages, so a resuming subscriber's replay spans several statements with
  // callbacks committing in between: the seam the subscription must handle.
  realtime: { replayPageSize: 1 },
  services: [
    { serviceCode: 'TESTING', secrets: [SECRET] },
    { serviceCode: 'ROTATING', secrets: [ROTATED_SECRET, SECRET] },
    { serviceCode: 'LOGONLY', secrets: [SECRET], verify: 'log' },
    { serviceCode: 'OPEN', verify: 'off' },
  ],
}

/** An HTTP answer, read whole. */
export interface Answer {
  status: number
  body: Record<string, unknown>
  text: string
}

/** Sends a request over a real socket and reads the answer. */
export async function send(
  request: SignedRequest | { method: string; url: string; headers?: Record<string, string>; body?: string | Buffer },
): Promise<Answer> {
  const response = await fetch(request.url, {
    method: request.method,
    headers: request.headers ?? {},
    ...(request.body !== undefined ? { body: request.body } : {}),
  })
  const text = await response.text()
  let body: Record<string, unknown> = {}
  try {
    body = JSON.parse(text) as Record<string, unknown>
  } catch {
    // left empty: the assertion on `text` says what came back
  }
  return { status: response.status, body, text }
}

/** What an integration test file is given: a database of its own and a gateway on it. */
export interface GatewayFixtures {
  db: TestDatabase
  /** In process, or `serve --workers 2` with TEST_GATEWAY=serve (gateway.mode.ts). */
  gateway: TestGateway
  /** Signs fields as the service would and sends them to the gateway. */
  deliver: (fields: Record<string, string>, options?: DeliverOptions) => Promise<Answer>
}

/** How {@link GatewayFixtures.deliver} signs and sends. */
export interface DeliverOptions {
  method?: 'GET' | 'POST'
  path?: string
  secret?: string
  headerPrefix?: string
  nowMs?: number
}

/** Signs a callback for the fixture gateway without sending it. */
export function signFor(
  gateway: Pick<TestGateway, 'url'>,
  fields: Record<string, string>,
  options: DeliverOptions = {},
): SignedRequest {
  return signCallback(fields, {
    url: `${gateway.url}${options.path ?? '/callbacks'}`,
    method: options.method ?? 'POST',
    secret: options.secret ?? SECRET,
    headerPrefix: options.headerPrefix ?? 'svc',
    nowMs: options.nowMs ?? Date.now(),
  })
}

/** Sends a signed callback and resolves once it is folded into the graph too. */
export async function deliverTo(
  gateway: Pick<TestGateway, 'url' | 'settle'>,
  fields: Record<string, string>,
  options: DeliverOptions = {},
): Promise<Answer> {
  const answer = await send(signFor(gateway, fields, options))
  await gateway.settle()
  return answer
}

/**
 * The integration suite's fixtures, one set per test file, on PGlite or on the PostgreSQL server
 * named by TEST_DATABASE_URL, in process or as `serve --workers 2`: the same tests run on each.
 */
export const test = base.extend<GatewayFixtures>({
  db: [
    async ({}, use) => {
      const db = await openTestDatabase()
      await use(db)
      await db.drop()
    },
    { scope: 'file' },
  ],
  gateway: [
    async ({ db }, use) => {
      const gateway = await startTestGateway(TEST_CONFIG, db)
      await use(gateway)
      await gateway.close()
    },
    { scope: 'file' },
  ],
  // A delivery resolves once its callback is folded into the graph too, so a test can read the
  // task it changed at once (the acknowledgement itself comes before the fold).
  deliver: async ({ gateway }, use) => {
    await use((fields, options) => deliverTo(gateway, fields, options))
  },
})
