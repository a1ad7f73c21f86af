// The trusted-key setups the README's "Trusted documents" section shows, as the client tests run
// them: each client sends the hash graphql-codegen's client preset put on every document
// (`__meta__.hash`) instead of the document, so a key with `operations: "trusted"` can run it.
import { ApolloClient, HttpLink, InMemoryCache } from '@apollo/client'
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries'
import { Client, cacheExchange, fetchExchange } from '@urql/core'
import { persistedExchange } from '@urql/exchange-persisted'
import type { DocumentNode } from 'graphql'
import { possibleTypes } from '../../schema/possible-types.js'

/** The hash codegen gave a document; undefined for one it never saw (the server refuses that). */
const hashOf = (document: DocumentNode): string | undefined =>
  (document as { __meta__?: { hash?: string } }).__meta__?.hash

/** Apollo Client 4: the persisted-query link before the HTTP link; hashed queries go by GET. */
export function apolloTrustedClient(gatewayUrl: string, key: string) {
  const http = new HttpLink({ uri: `${gatewayUrl}/graphql`, headers: { authorization: `Bearer ${key}` } })
  const persisted = new PersistedQueryLink({
    generateHash: (document) => hashOf(document) as string,
    useGETForHashedQueries: true,
  })
  return new ApolloClient({ link: persisted.concat(http), cache: new InMemoryCache({ possibleTypes }) })
}

/** urql 6: the persisted exchange before the fetch exchange, enforcing persisted queries (no fallback to the text). */
export function urqlTrustedClient(gatewayUrl: string, key: string) {
  return new Client({
    url: `${gatewayUrl}/graphql`,
    fetchOptions: { headers: { authorization: `Bearer ${key}` } },
    exchanges: [
      cacheExchange,
      persistedExchange({
        enforcePersistedQueries: true,
        generateHash: async (_query, document) => hashOf(document) ?? null,
      }),
      fetchExchange,
    ],
  })
}
