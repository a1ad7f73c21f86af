// The Node router of the composition test: @apollo/gateway over a supergraph composed beforehand,
// run as its own process: `node --import tsx test/federation/supergraph.gateway.ts <supergraph file>`
// prints the address it listens on. It hands each request's Authorization to the subgraphs, so
// livegate scopes what the router reads to the caller's API key.
import { readFileSync } from 'node:fs'
import { ApolloGateway, RemoteGraphQLDataSource } from '@apollo/gateway'
import { ApolloServer } from '@apollo/server'
import { startStandaloneServer } from '@apollo/server/standalone'

type Context = { authorization?: string }

const gateway = new ApolloGateway({
  supergraphSdl: readFileSync(process.argv[2] as string, 'utf8'),
  buildService: ({ url }) =>
    new RemoteGraphQLDataSource<Context>({
      ...(url ? { url } : {}),
      willSendRequest({ request, context }) {
        if (context.authorization) request.http?.headers.set('authorization', context.authorization)
      },
    }),
})
const server = new ApolloServer<Context>({ gateway })
const { url } = await startStandaloneServer(server, {
  listen: { port: 0, host: '127.0.0.1' },
  context: async ({ req }) => (req.headers.authorization ? { authorization: req.headers.authorization } : {}),
})
process.stdout.write(`router listening on ${url}\n`)
process.once('SIGTERM', () => void server.stop().then(() => process.exit(0)))
