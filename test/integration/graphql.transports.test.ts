import { readFileSync } from 'node:fs'
import { createClient } from 'graphql-ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import type { Gateway } from '../../src/gateway.assembly.js'
import { driverName, type TestDatabase } from '../support/database.fixture.js'
import { startTableGateway, TABLE_KEYS, TRUSTED_MANIFEST } from '../support/trusted.gateway.js'

// One table of requests, each sent over HTTP and over graphql-ws: every answer, refusal and
// masked fault must be the same on both, because both run the one request pipeline.

const KEYS = TABLE_KEYS
const manifest = JSON.parse(readFileSync(TRUSTED_MANIFEST, 'utf8')) as Record<string, string>
const freshnessHash = Object.keys(manifest).find((hash) => /query Freshness\b/.test(manifest[hash] as string)) as string

interface Sent {
  query?: string
  variables?: Record<string, unknown>
  operationName?: string
  extensions?: Record<string, unknown>
}

/** What both transports are compared on: the data, and each error's message and code. */
interface Compared {
  data: unknown
  errors: Array<{ message: string; code: unknown; leaked?: string }> | undefined
}

function compared(data: unknown, errors: Array<Record<string, any>> | undefined): Compared {
  return {
    data: data ?? null,
    errors: errors?.map((error) => {
      const extensions = error.extensions ?? {}
      // Whatever else an error carries, it never carries a stack or a statement.
      const leaked = JSON.stringify(error).match(/select |stacktrace|at .*\.ts:\d+/i)?.[0]
      return { message: error.message, code: extensions.code, ...(leaked ? { leaked } : {}) }
    }),
  }
}

async function overHttp(url: string, sent: Sent, key: string): Promise<Compared> {
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json',
      authorization: `Bearer ${key}`,
    },
    body: JSON.stringify(sent),
  })
  const body = (await response.json()) as { data?: unknown; errors?: Array<Record<string, any>> }
  return compared(body.data, body.errors)
}

async function overSocket(url: string, sent: Sent, key: string): Promise<Compared> {
  const client = createClient({
    url: `${url.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    connectionParams: { authorization: `Bearer ${key}` },
  })
  try {
    return await new Promise<Compared>((resolve) => {
      let last: Compared = { data: null, errors: undefined }
      client.subscribe(
        {
          query: sent.query ?? '',
          variables: sent.variables,
          operationName: sent.operationName,
          extensions: sent.extensions,
        } as never,
        {
          next: (result) => {
            last = compared(result.data, result.errors as never)
          },
          error: (error) =>
            resolve(
              Array.isArray(error)
                ? compared(null, error)
                : {
                    data: null,
                    errors: [
                      {
                        message: String((error as { reason?: string }).reason ?? error),
                        code: (error as { code?: number }).code,
                      },
                    ],
                  },
            ),
          complete: () => resolve(last),
        },
      )
    })
  } finally {
    await client.dispose()
  }
}

const DEEP =
  '{ tasks(first: 1) { edges { node { user { tasks(first: 1) { edges { node { user { tasks(first: 1) { edges { ' +
  'node { id } } } } } } } } } } } }'

const CASES: Array<{ name: string; key: keyof typeof KEYS; sent: Sent; code?: string; data?: unknown }> = [
  {
    name: 'a document that does not parse',
    key: 'all',
    sent: { query: '{ tasks(first: ' },
    code: 'GRAPHQL_PARSE_FAILED',
  },
  { name: 'a field the schema lacks', key: 'all', sent: { query: '{ nope }' }, code: 'GRAPHQL_VALIDATION_FAILED' },
  {
    name: 'an unknown operation name',
    key: 'all',
    sent: { query: 'query A { taskCounts { live } }', operationName: 'B' },
    code: 'OPERATION_RESOLUTION_FAILURE',
  },
  {
    name: 'a bad argument',
    key: 'all',
    sent: { query: '{ tasks(first: -1) { totalCount } }' },
    code: 'BAD_USER_INPUT',
  },
  {
    name: 'a variable that does not coerce',
    key: 'all',
    sent: { query: 'query($n: Int) { tasks(first: $n) { totalCount } }', variables: { n: 'x' } },
    code: 'BAD_USER_INPUT',
  },
  { name: 'too deep', key: 'all', sent: { query: DEEP }, code: 'QUERY_TOO_DEEP' },
  {
    name: 'too many aliases',
    key: 'all',
    sent: { query: '{ a: taskCounts { live } b: taskCounts { live } c: taskCounts { live } d: taskCounts { live } }' },
    code: 'TOO_MANY_ALIASES',
  },
  {
    name: 'too costly',
    key: 'all',
    sent: { query: '{ tasks(first: 400) { edges { node { id taskId status userName } } } }' },
    code: 'QUERY_TOO_COSTLY',
  },
  {
    name: 'a task of its own tenant',
    key: 'tenant',
    sent: { query: '{ tasks(first: 5) { edges { node { taskId serviceCode } } } }' },
    data: { tasks: { edges: [{ node: { taskId: 'mine', serviceCode: 'TESTING' } }] } },
  },
  {
    name: "another tenant's task, as one unknown",
    key: 'tenant',
    sent: {
      query: 'query($id: ID!) { node(id: $id) { id } }',
      variables: { id: Buffer.from('Task:["OPEN","theirs"]').toString('base64url') },
    },
    data: { node: null },
  },
  {
    name: 'a read-only key acting',
    key: 'tenant',
    sent: {
      query: 'mutation($id: ID!) { stopTask(id: $id, reason: "test") { action { id state } } }',
      variables: { id: Buffer.from('Task:["TESTING","mine"]').toString('base64url') },
    },
    code: 'FORBIDDEN',
  },
  {
    name: 'a trusted-only key sending text',
    key: 'trusted',
    sent: { query: '{ taskCounts { live } }' },
    code: 'PERSISTED_QUERY_ID_REQUIRED',
  },
  {
    name: 'a trusted-only key naming an unknown hash',
    key: 'trusted',
    sent: { extensions: { persistedQuery: { version: 1, sha256Hash: 'f'.repeat(64) } } },
    code: 'PERSISTED_QUERY_NOT_IN_LIST',
  },
  {
    name: 'a trusted-only key naming a trusted document',
    key: 'trusted',
    sent: { extensions: { persistedQuery: { version: 1, sha256Hash: freshnessHash } } },
    data: expect.anything(),
  },
]

describe(`one pipeline: HTTP and graphql-ws answer the same (${driverName})`, () => {
  let db: TestDatabase
  let gateway: Gateway

  beforeAll(async () => {
    ;({ db, gateway } = await startTableGateway())
  })

  afterAll(async () => {
    await gateway?.close()
    await db?.drop()
  })

  for (const example of CASES) {
    it(example.name, async () => {
      const http = await overHttp(gateway.url, example.sent, KEYS[example.key])
      const socket = await overSocket(gateway.url, example.sent, KEYS[example.key])
      expect(socket).toEqual(http)
      if (example.code) expect(http.errors?.map((error) => error.code)).toEqual([example.code])
      else {
        expect(http.errors).toBeUndefined()
        expect(http.data).toEqual(example.data)
      }
    })
  }

  it('refuses a wrong key on both: 401 over HTTP, close 4401 over graphql-ws', async () => {
    const http = await fetch(`${gateway.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer wrong' },
      body: '{"query":"{ taskCounts { live } }"}',
    })
    expect(http.status).toBe(401)
    expect(
      ((await http.json()) as { errors: Array<{ extensions: { code: string } }> }).errors[0]?.extensions.code,
    ).toBe('UNAUTHENTICATED')
    const socket = await overSocket(gateway.url, { query: '{ taskCounts { live } }' }, 'wrong')
    expect(socket.errors?.[0]?.code).toBe(4401)
  })

  // Last: the database is closed under the gateway, and what fails is a fault of livegate's.
  it('masks a fault from below the same way: the code and "Internal error.", never the statement', async () => {
    await db.database.close()
    const sent = { query: '{ tasks(first: 1) { edges { node { id } } } }' }
    const http = await overHttp(gateway.url, sent, KEYS.all)
    const socket = await overSocket(gateway.url, sent, KEYS.all)
    expect(http.errors).toEqual([{ message: 'Internal error.', code: 'INTERNAL_SERVER_ERROR' }])
    expect(socket).toEqual(http)
    // Sent again, the operation runs compiled (graphql-jit): its errors are masked the same way.
    expect(await overHttp(gateway.url, sent, KEYS.all)).toEqual(http)
  })
})
