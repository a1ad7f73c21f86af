// The urql 6 setup the README's Frontend section shows, as the client tests run it.
import { Client, fetchExchange, subscriptionExchange } from '@urql/core'
import { type CacheExchangeOpts, type Data, cacheExchange } from '@urql/exchange-graphcache'
import { relayPagination } from '@urql/exchange-graphcache/extras'
import { createClient } from 'graphql-ws'
import WebSocket from 'ws'
import { keyFields, possibleTypes } from '../../schema/possible-types.js'

// Graphcache keys a type by `id` unless told otherwise, and warns of a type without one: the
// shipped key fields say which types are values kept inside their parent.
const keys = Object.fromEntries(
  Object.entries(keyFields).map(([type, fields]) => [
    type,
    fields ? (data: Data) => fields.map((field) => String(data[field])).join(':') : () => null,
  ]),
)

/**
 * A urql client on a livegate gateway: graphcache with the shipped possible types and keys,
 * queries by fetch (GET while the URL is short, urql's default), subscriptions over graphql-ws.
 * `extra` adds graphcache options (the tests pass a storage adapter to read the normalized records).
 */
export function urqlClient(gatewayUrl: string, extra: Partial<CacheExchangeOpts> = {}, fetchFn: typeof fetch = fetch) {
  const sockets = createClient({
    url: `${gatewayUrl.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
  })
  const cache = cacheExchange({
    keys,
    possibleTypes,
    resolvers: {
      Query: { tasks: relayPagination(), users: relayPagination(), notifications: relayPagination() },
      Task: { notifications: relayPagination() },
      User: { tasks: relayPagination() },
    },
    ...extra,
  })
  const client = new Client({
    url: `${gatewayUrl}/graphql`,
    fetch: fetchFn,
    exchanges: [
      cache,
      fetchExchange,
      subscriptionExchange({
        forwardSubscription: (request) => ({
          subscribe: (sink) => ({
            unsubscribe: sockets.subscribe(
              { ...request, query: request.query ?? '' },
              sink as Parameters<typeof sockets.subscribe>[1],
            ),
          }),
        }),
      }),
    ],
  })
  return { client, close: () => sockets.dispose() }
}
