// The Apollo Client 4 setup the README's Frontend section shows, as the client tests run it.
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache } from '@apollo/client'
import { GraphQLWsLink } from '@apollo/client/link/subscriptions'
import { isSubscriptionOperation, relayStylePagination } from '@apollo/client/utilities'
import { createClient } from 'graphql-ws'
import WebSocket from 'ws'
import { possibleTypes } from '../../schema/possible-types.js'

/** An Apollo Client on a livegate gateway: queries over HTTP, subscriptions over graphql-ws. */
export function apolloClient(gatewayUrl: string, options: { possibleTypes?: boolean } = {}) {
  const http = new HttpLink({ uri: `${gatewayUrl}/graphql` })
  // In a browser, graphql-ws finds the global WebSocket; Node 20 needs `ws`.
  const sockets = createClient({
    url: `${gatewayUrl.replace(/^http/, 'ws')}/graphql`,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
  })
  const link = ApolloLink.split(({ query }) => isSubscriptionOperation(query), new GraphQLWsLink(sockets), http)
  const cache = new InMemoryCache({
    // Without it, a fragment on an interface (Node, Notification) matches nothing, and its fields
    // are missing from the cache. Every keyed type is keyed by `id`, Apollo's default.
    ...(options.possibleTypes === false ? {} : { possibleTypes }),
    typePolicies: {
      // Connections page by cursor: fetchMore appends a page to the list the filter names.
      Query: {
        fields: {
          tasks: relayStylePagination(['filter']),
          users: relayStylePagination(['filter']),
          notifications: relayStylePagination(['filter']),
        },
      },
      Task: { fields: { notifications: relayStylePagination(['filter']) } },
      User: { fields: { tasks: relayStylePagination(['filter']) } },
    },
  })
  const client = new ApolloClient({ link, cache })
  return {
    client,
    async close() {
      client.stop()
      await sockets.dispose()
    },
  }
}
