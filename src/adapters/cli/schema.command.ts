import type { GraphQLSchema } from 'graphql'
import { buildGraphqlSchema, printGraphqlSchema } from '../graphql/pipeline/schema.build.js'
import type { Command } from './command.model.js'
import { printPossibleTypes } from './possible-types.print.js'

const PRINTS: Record<string, (schema: GraphQLSchema) => string | Promise<string>> = {
  sdl: printGraphqlSchema,
  'possible-types': printPossibleTypes,
  // Loaded only for this print: federation's libraries are heavy for every other command.
  subgraph: async (schema) => (await import('../graphql/pipeline/subgraph.schema.js')).printSubgraphSdl(schema),
}

/**
 * `livegate schema [sdl | possible-types | subgraph]`: prints the GraphQL schema (SDL) that the
 * gateway serves, what a client cache needs of it (possible types and key fields), or the
 * Federation 2 subgraph SDL (`_service { sdl }` with `graphql.federation`). `npm run schema:emit`
 * writes them to schema/schema.graphql, schema/possible-types.ts and schema/subgraph.graphql,
 * committed contracts that tests compare with the code.
 */
export const schemaCommand: Command = async (args, _config, io) => {
  const print = PRINTS[args[0] ?? 'sdl']
  if (!print || args.length > 1) {
    io.err(`livegate schema: takes one of ${Object.keys(PRINTS).join(', ')}; got ${args.join(' ')}`)
    return 2
  }
  io.out(await print(await buildGraphqlSchema()))
  return 0
}
