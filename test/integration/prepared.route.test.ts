import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Gateway } from '../../src/gateway.assembly.js'
import { driverName, type TestDatabase } from '../support/database.fixture.js'
import { metricValue, scrapeMetrics } from '../support/metrics.scrape.js'
import { startTableGateway, TABLE_KEYS } from '../support/trusted.gateway.js'

// The prepared route answers a query Apollo answered before without Apollo: every answer it
// gives must be Apollo's, byte for byte, and everything it does not take on must reach Apollo.

const KEYS = TABLE_KEYS
const SMALL = 'query TaskList($first: Int) { tasks(first: $first) { edges { node { id status userName } } } }'

interface Answer {
  status: number
  contentType: string | null
  cacheControl: string | null
  body: string
}

async function post(url: string, sent: unknown, key: string, accept?: string): Promise<Answer> {
  const headers: Record<string, string> = { 'content-type': 'application/json', authorization: `Bearer ${key}` }
  if (accept !== undefined) headers.accept = accept
  const response = await fetch(`${url}/graphql`, { method: 'POST', headers, body: JSON.stringify(sent) })
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    cacheControl: response.headers.get('cache-control'),
    body: await response.text(),
  }
}

describe(`the prepared route answers as Apollo does (${driverName})`, () => {
  let db: TestDatabase
  let gateway: Gateway
  const prepared = async () => metricValue(await scrapeMetrics(gateway.url), 'livegate_graphql_prepared_total')

  beforeAll(async () => {
    ;({ db, gateway } = await startTableGateway())
  })

  afterAll(async () => {
    await gateway?.close()
    await db?.drop()
  })

  for (const accept of [undefined, '*/*', 'application/graphql-response+json, application/json;q=0.9']) {
    it(`answers a query sent again with Apollo's bytes and headers (accept: ${accept ?? 'none'})`, async () => {
      const sent = { operationName: 'TaskList', query: SMALL, variables: { first: 20 } }
      const first = await post(gateway.url, sent, KEYS.all, accept)
      const before = await prepared()
      const again = await post(gateway.url, sent, KEYS.all, accept)
      expect(await prepared()).toBe(before + 1)
      expect(again).toEqual(first)
      expect(first.status).toBe(200)
      expect(JSON.parse(first.body).data.tasks.edges).toHaveLength(2)
    })
  }

  it("keeps each key's scope: a text another key prepared answers a tenant with its own tasks", async () => {
    const sent = { query: '{ tasks(first: 5) { edges { node { taskId serviceCode } } } }' }
    await post(gateway.url, sent, KEYS.all)
    const before = await prepared()
    const tenant = await post(gateway.url, sent, KEYS.tenant)
    expect(await prepared()).toBe(before + 1)
    const edges = [{ node: { taskId: 'mine', serviceCode: 'TESTING' } }]
    expect(JSON.parse(tenant.body)).toEqual({ data: { tasks: { edges } } })
  })

  // Each refusal is sent after the same text was answered, and must be what Apollo answers.
  type Refused = { name: string; key: keyof typeof KEYS; variables: Record<string, unknown>; code: string }
  const REFUSED: Refused[] = [
    { name: 'a trusted-only key sending text', key: 'trusted', variables: {}, code: 'PERSISTED_QUERY_ID_REQUIRED' },
    { name: 'variables over the cost limit', key: 'all', variables: { first: 400 }, code: 'QUERY_TOO_COSTLY' },
    { name: 'a variable that does not coerce', key: 'all', variables: { first: 'x' }, code: 'BAD_USER_INPUT' },
  ]
  for (const refused of REFUSED) {
    it(`hands ${refused.name} to Apollo, refused as ever`, async () => {
      await post(gateway.url, { query: SMALL, variables: { first: 20 } }, KEYS.all)
      const before = await prepared()
      const answer = await post(gateway.url, { query: SMALL, variables: refused.variables }, KEYS[refused.key])
      expect(await prepared()).toBe(before)
      const errors: Array<{ extensions: { code: string } }> = JSON.parse(answer.body).errors
      expect(errors.map((error) => error.extensions.code)).toEqual([refused.code])
    })
  }

  it('hands a wrong key to Apollo: 401', async () => {
    await post(gateway.url, { query: SMALL }, KEYS.all)
    const answer = await post(gateway.url, { query: SMALL }, 'wrong')
    expect(answer.status).toBe(401)
    expect(JSON.parse(answer.body).errors[0].extensions.code).toBe('UNAUTHENTICATED')
  })

  it('counts the operations it answers in the same series as Apollo', async () => {
    const sent = { operationName: 'Counted', query: 'query Counted { taskCounts { live } }' }
    for (let i = 0; i < 3; i++) await post(gateway.url, sent, KEYS.all)
    const samples = await scrapeMetrics(gateway.url)
    expect(metricValue(samples, 'livegate_graphql_seconds_count', { operation: 'Counted', type: 'query' })).toBe(3)
  })

  // Last: the database is closed under the gateway. A prepared query's fault goes to Apollo,
  // which masks it as ever.
  it('hands an answer with an error to Apollo, masked as ever', async () => {
    const sent = { query: '{ tasks(first: 1) { edges { node { id } } } }' }
    await post(gateway.url, sent, KEYS.all)
    await db.database.close()
    const answer = await post(gateway.url, sent, KEYS.all)
    const errors: Array<{ message: string; extensions: { code: string } }> = JSON.parse(answer.body).errors
    const masked = [['Internal error.', 'INTERNAL_SERVER_ERROR']]
    expect(errors.map((error) => [error.message, error.extensions.code])).toEqual(masked)
  })
})
