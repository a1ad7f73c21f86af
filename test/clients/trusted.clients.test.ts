// Apollo Client 4 and urql 6 at their documented persisted-query setups, against a real gateway
// whose key runs only the trusted documents of schema/client/trusted/persisted-documents.json.
import { CombinedGraphQLErrors, gql } from '@apollo/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FreshnessDocument, SearchTasksDocument } from '../../schema/client/trusted/graphql.js'
import type { Gateway } from '../../src/gateway.assembly.js'
import { driverName } from '../support/database.fixture.js'
import { startTrustedGateway } from '../support/trusted.gateway.js'
import { apolloTrustedClient, urqlTrustedClient } from './trusted.setup.js'

const KEY = 'public-page-key'
const AD_HOC = gql`query AdHoc { tasks(first: 500) { totalCount edges { node { id opaque } } } }`
const errorCodes = (errors: ReadonlyArray<{ extensions?: Record<string, unknown> | undefined }>) =>
  errors.map((error) => error.extensions?.code)

describe(`persisted-query clients with a trusted-only key (${driverName})`, { timeout: 300_000 }, () => {
  let trusted: Awaited<ReturnType<typeof startTrustedGateway>>
  let gateway: Gateway

  beforeAll(async () => {
    trusted = await startTrustedGateway(
      [{ name: 'public-page', key: KEY, serviceCodes: ['TESTING'], operations: 'trusted' }],
      'public-task',
    )
    gateway = trusted.gateway
  })

  afterAll(async () => {
    await trusted?.close()
  })

  it(
    'Apollo Client 4 with its persisted-query link: the ' + "manifest's operations answer, an ad-hoc query is refused",
    async () => {
      const client = apolloTrustedClient(gateway.url, KEY)
      try {
        const { data } = await client.query({ query: SearchTasksDocument, variables: { taskIds: ['public-task'] } })
        expect(data?.tasks.edges.map((edge) => edge.node)).toEqual([
          expect.objectContaining({ taskId: 'public-task', serviceCode: 'TESTING', status: 'LIVE' }),
        ])
        const freshness = await client.query({ query: FreshnessDocument })
        expect(freshness.data?.upstreams.map((status) => status.serviceCode)).toEqual(['TESTING'])
        const refused = await client.query({ query: AD_HOC }).then(
          () => undefined,
          (error: unknown) => error,
        )
        expect(CombinedGraphQLErrors.is(refused)).toBe(true)
        expect(errorCodes((refused as CombinedGraphQLErrors).errors)).toEqual(['PERSISTED_QUERY_ID_REQUIRED'])
      } finally {
        client.stop()
      }
    },
  )

  it("urql 6 with its persisted exchange: the manifest's operations answer, an ad-hoc query is refused", async () => {
    const client = urqlTrustedClient(gateway.url, KEY)
    const answer = await client.query(SearchTasksDocument, { taskIds: ['public-task'] }).toPromise()
    expect(answer.error).toBeUndefined()
    expect(answer.data?.tasks.edges.map((edge) => edge.node)).toEqual([
      expect.objectContaining({ taskId: 'public-task', status: 'LIVE' }),
    ])
    const freshness = await client.query(FreshnessDocument, {}).toPromise()
    expect(freshness.data?.upstreams.map((status) => status.serviceCode)).toEqual(['TESTING'])
    const refused = await client.query(AD_HOC, {}).toPromise()
    expect(refused.data).toBeUndefined()
    expect(errorCodes(refused.error?.graphQLErrors ?? [])).toEqual(['PERSISTED_QUERY_ID_REQUIRED'])
  })
})
