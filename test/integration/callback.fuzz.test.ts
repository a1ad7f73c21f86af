import fc from 'fast-check'
import { describe, expect } from 'vitest'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { type CatalogueCode, errorCatalogue } from '../../src/model/error.catalogue.js'
import { driverName } from '../support/database.fixture.js'
import { send, signFor, test } from '../support/gateway.fixture.js'

// Header values fetch can put on the wire: printable ASCII.
const headerText = fc.string({
  unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
  maxLength: 80,
})
const anyText = fc.string({ unit: 'binary', maxLength: 60 })
const fieldName = fc.oneof(
  fc.constantFrom(
    'type',
    'service_code',
    'hashed_id',
    'size',
    'created_at',
    'status',
    'reach_end',
    'username',
    '__proto__',
    'constructor',
  ),
  anyText,
)
const fieldValue = fc.oneof(
  anyText,
  fc.constantFrom(
    '0',
    '1',
    '2',
    '8',
    '9',
    '15',
    'TESTING',
    'LOGONLY',
    '480x800',
    '99999999999999999999',
    '-1',
    '\u0000',
    '%00',
  ),
)

const answeredWithACode = (status: number, text: string) => {
  expect(status, text).toBeLessThan(500)
  const body = JSON.parse(text) as { ret: number; code?: string }
  expect(body.ret).toBeTypeOf('number')
  if (status === 200) return
  // Every refusal is a code of the one catalogue, answered with that code's status and ret.
  const entry = errorCatalogue[body.code as CatalogueCode]
  expect(entry?.on, text).toBe('http')
  if (entry?.on === 'http') expect([status, body.ret]).toEqual([entry.status, entry.ret])
}

describe(`arbitrary input never gets a 5xx (${driverName})`, () => {
  test('unsigned junk: any method, path, query, headers and body', async ({ gateway }) => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH'),
        fc.webPath(),
        fc.webQueryParameters(),
        fc.record(
          {
            'content-type': fc.oneof(
              headerText,
              fc.constantFrom(
                'application/x-www-form-urlencoded',
                'application/x-www-form-urlencoded; charset=utf-8',
                'multipart/form-data; boundary=x',
                'text/plain',
              ),
            ),
            'svc-signature': fc.oneof(headerText, fc.stringMatching(/^[0-9a-f]{64}$/)),
            'svc-timestamp': fc.oneof(headerText, fc.integer({ min: 0, max: 2 ** 52 }).map(String)),
          },
          { requiredKeys: [] },
        ),
        fc.uint8Array({ maxLength: 2048 }),
        async (method, path, query, headers, body) => {
          const hasBody = method !== 'GET'
          const answer = await send({
            method,
            url: `${gateway.url}/callbacks${path}${query ? `?${query}` : ''}`,
            headers,
            ...(hasBody ? { body: Buffer.from(body) } : {}),
          })
          answeredWithACode(answer.status, answer.text)
        },
      ),
      { numRuns: 150 },
    )
  })

  test('correctly signed arbitrary fields reach the parser and the database', async ({ gateway }) => {
    let kept = 0
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fieldName, fieldValue, { maxKeys: 12 }),
        fc.constantFrom('TESTING', 'LOGONLY'),
        fc.constantFrom('GET', 'POST') as fc.Arbitrary<'GET' | 'POST'>,
        async (fields, serviceCode, method) => {
          const answer = await send(
            signFor(gateway, { type: '0', hashed_id: 'fuzz', ...fields, service_code: serviceCode }, { method }),
          )
          answeredWithACode(answer.status, answer.text)
          if (answer.status === 200) kept++
        },
      ),
      { numRuns: 150 },
    )
    // Most signed inputs are valid notifications; the property must have exercised the store.
    expect(kept).toBeGreaterThan(50)
  })

  test('and the gateway still keeps a genuine callback afterwards', async ({ deliver }) => {
    const answer = await deliver(sampleCallbacks('after-fuzz').liveStart as Record<string, string>)
    expect(answer.status, answer.text).toBe(200)
  })
})
