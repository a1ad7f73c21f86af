import { createHash } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createClient } from 'graphql-ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { loadConfig } from '../../src/config/index.js'
import { driverName, type TestDatabase } from '../support/database.fixture.js'
import { TEST_CONFIG } from '../support/gateway.fixture.js'
import { startTrustedGateway, TRUSTED_MANIFEST } from '../support/trusted.gateway.js'
import { scratchDirs } from '../support/scratch.dir.js'

const manifest = JSON.parse(readFileSync(TRUSTED_MANIFEST, 'utf8')) as Record<string, string>
const hashOf = (operation: string) => {
  const found = Object.entries(manifest).find(([, text]) =>
    new RegExp(`^(query|subscription) ${operation}\\b`).test(text),
  )
  if (!found) throw new Error(`no ${operation} in the manifest`)
  return found[0]
}
const KEYS = { trusted: 'public-viewer-key', any: 'dashboard-key' }
const persisted = (sha256Hash: string) => ({ persistedQuery: { version: 1, sha256Hash } })
const AD_HOC = '{ tasks { totalCount } }'
// What the manifest's Freshness answers for this key: the one code it may read, never polled.
const FRESHNESS = {
  __typename: 'Query',
  upstreams: [expect.objectContaining({ __typename: 'UpstreamStatus', serviceCode: 'TESTING', configured: false })],
}
const scratch = scratchDirs('livegate-trusted-')

describe(`trusted documents per API key (${driverName})`, () => {
  let trusted: Awaited<ReturnType<typeof startTrustedGateway>>
  let gateway: Gateway
  let db: TestDatabase

  beforeAll(async () => {
    trusted = await startTrustedGateway(
      [
        { name: 'viewer', key: KEYS.trusted, serviceCodes: ['TESTING'], operations: 'trusted' },
        { name: 'dashboard', key: KEYS.any, serviceCodes: ['TESTING'] },
      ],
      'trusted-task',
    )
    ;({ gateway, db } = trusted)
  }, 300_000)

  afterAll(async () => {
    await trusted?.close()
  })

  /**
   * One request as the persisted-query clients send it: POST with a JSON body, or GET with JSON in the query string.
   */
  const request = async (
    key: string,
    body: { query?: string; variables?: object; extensions?: object; operationName?: string },
    method: 'GET' | 'POST' = 'POST',
  ) => {
    const url = new URL('/graphql', gateway.url)
    const headers: Record<string, string> = {
      authorization: `Bearer ${key}`,
      accept: 'application/graphql-response+json',
    }
    let init: RequestInit = { method, headers }
    if (method === 'GET') {
      for (const [name, value] of Object.entries(body))
        url.searchParams.set(name, typeof value === 'string' ? value : JSON.stringify(value))
    } else {
      init = { ...init, headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) }
    }
    const response = await fetch(url, init)
    const text = await response.text()
    return {
      status: response.status,
      text,
      ...(JSON.parse(text) as { data?: any; errors?: Array<{ message: string; extensions?: { code?: string } }> }),
    }
  }
  const codes = (answer: { errors?: Array<{ extensions?: { code?: string } }> }) =>
    answer.errors?.map((error) => error.extensions?.code)

  it('runs a manifest document named by its hash, by POST and by GET, for a trusted-only key', async () => {
    const variables = { taskIds: ['trusted-task'] }
    for (const method of ['POST', 'GET'] as const) {
      const answer = await request(
        KEYS.trusted,
        { operationName: 'SearchTasks', variables, extensions: persisted(hashOf('SearchTasks')) },
        method,
      )
      expect(answer.errors, answer.text).toBeUndefined()
      expect(answer.data.tasks.edges[0].node).toMatchObject({
        __typename: 'Task',
        taskId: 'trusted-task',
        status: 'LIVE',
      })
    }
    // The bare hex digest (what a client hashing the text itself sends) names the same document.
    const bare = await request(KEYS.trusted, { extensions: persisted(hashOf('Freshness').replace(/^sha256:/, '')) })
    expect(bare.errors, bare.text).toBeUndefined()
    expect(bare.data).toEqual(FRESHNESS)
  })

  it(
    'refuses a raw document from a trusted-only key with ' + 'PERSISTED_QUERY_ID_REQUIRED, by POST and by GET',
    async () => {
      for (const method of ['POST', 'GET'] as const) {
        const answer = await request(KEYS.trusted, { query: AD_HOC }, method)
        expect({ status: answer.status, codes: codes(answer), data: answer.data }).toEqual({
          status: 400,
          codes: ['PERSISTED_QUERY_ID_REQUIRED'],
          data: undefined,
        })
        expect(answer.errors?.[0]?.message).toMatch(/runs only trusted documents/)
      }
      // A document that does not even parse is refused the same way: it is never read.
      const broken = await request(KEYS.trusted, { query: '{ tasks {' })
      expect(codes(broken)).toEqual(['PERSISTED_QUERY_ID_REQUIRED'])
    },
  )

  it('refuses an unknown hash with PERSISTED_QUERY_NOT_IN_LIST, and registers nothing sent with one', async () => {
    const hash = createHash('sha256').update(AD_HOC).digest('hex')
    // Automatic persisted queries' registration: the text with its hash. Refused, not kept.
    const register = await request(KEYS.trusted, { query: AD_HOC, extensions: persisted(hash) })
    expect({ status: register.status, codes: codes(register), data: register.data }).toEqual({
      status: 400,
      codes: ['PERSISTED_QUERY_NOT_IN_LIST'],
      data: undefined,
    })
    const again = await request(KEYS.trusted, { extensions: persisted(hash) }, 'GET')
    expect(codes(again)).toEqual(['PERSISTED_QUERY_NOT_IN_LIST'])
    // Text sent beside a known hash is never what runs: the manifest's document is.
    const swapped = await request(KEYS.trusted, { query: AD_HOC, extensions: persisted(hashOf('Freshness')) })
    expect(swapped.errors, swapped.text).toBeUndefined()
    expect(swapped.data).toEqual(FRESHNESS)
  })

  it('keeps automatic persisted queries as they were for any other key', async () => {
    const hash = createHash('sha256').update(AD_HOC).digest('hex')
    expect((await request(KEYS.any, { query: AD_HOC })).data).toEqual({ tasks: { totalCount: 1 } })
    expect(codes(await request(KEYS.any, { extensions: persisted(hash) }))).toEqual(['PERSISTED_QUERY_NOT_FOUND'])
    expect((await request(KEYS.any, { query: AD_HOC, extensions: persisted(hash) })).data).toEqual({
      tasks: { totalCount: 1 },
    })
    expect((await request(KEYS.any, { extensions: persisted(hash) }, 'GET')).data).toEqual({ tasks: { totalCount: 1 } })
    // A manifest hash means nothing to such a key until its text was registered.
    expect(codes(await request(KEYS.any, { extensions: persisted(hashOf('Freshness')) }))).toEqual([
      'PERSISTED_QUERY_NOT_FOUND',
    ])
  })

  it('holds over graphql-ws too: a hash runs its document, a raw document is refused', async () => {
    const client = createClient({
      url: `${gateway.url.replace(/^http/, 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      retryAttempts: 0,
      connectionParams: { authorization: `Bearer ${KEYS.trusted}` },
    })
    const run = async (payload: { query: string; extensions?: Record<string, unknown> }) => {
      const results: unknown[] = []
      try {
        for await (const result of client.iterate(payload)) results.push(result)
      } catch (error) {
        results.push(error)
      }
      return results
    }
    try {
      expect(await run({ query: '', extensions: persisted(hashOf('Freshness')) })).toEqual([{ data: FRESHNESS }])
      const [raw] = (await run({ query: AD_HOC })) as Array<Array<{ extensions?: { code?: string } }>>
      expect(raw?.map((error) => error.extensions?.code)).toEqual(['PERSISTED_QUERY_ID_REQUIRED'])
      const [unknown] = (await run({ query: AD_HOC, extensions: persisted('0'.repeat(64)) })) as Array<
        Array<{ extensions?: { code?: string } }>
      >
      expect(unknown?.map((error) => error.extensions?.code)).toEqual(['PERSISTED_QUERY_NOT_IN_LIST'])
    } finally {
      await client.dispose()
    }
  })

  it('refuses to start on a trusted key without manifests, or on a manifest that is not one', async () => {
    const value = {
      ...TEST_CONFIG,
      apiKeys: [{ name: 'viewer', key: KEYS.trusted, serviceCodes: ['*'], operations: 'trusted' }],
    }
    expect(() => loadConfig({ env: {}, value })).toThrow(
      /apiKeys\[0\]\.operations: "trusted" needs graphql\.trustedDocuments/,
    )
    const dir = scratch()
    const cases: Array<[string, RegExp]> = [
      ['["not", "a", "map"]', /expected a JSON object of hash → document text/],
      ['{ "abc": "{ noSuchField }" }', /abc: Cannot query field "noSuchField" on type "Query"/],
      ['{ "abc": "{ tasks {" }', /abc: Syntax Error/],
    ]
    for (const [text, reason] of cases) {
      const file = join(dir, `manifest-${cases.findIndex(([other]) => other === text)}.json`)
      writeFileSync(file, text)
      await expect(
        startGateway(loadConfig({ env: {}, value: { ...value, graphql: { trustedDocuments: file } } }), {
          database: db.database,
        }),
      ).rejects.toThrow(reason)
    }
  })
})
