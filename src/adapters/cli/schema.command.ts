import { buildGraphqlSchema, printGraphqlSchema } from '../graphql/schema.build.js'
import type { Command } from './command.model.js'
import { printPossibleTypes } from './possible-types.print.js'

const PRINTS: Record<string, typeof printGraphqlSchema> = {
  sdl: printGraphqlSchema,
  'possible-types': printPossibleTypes,
}

/**
 * `livegate schema [sdl | possible-types]`: prints the GraphQL schema (SDL) that the gateway
 * serves, or what a client cache needs of it (possible types and key fields). `npm run
 * schema:emit` writes them to schema/schema.graphql and schema/possible-types.ts, committed
 * contracts that tests compare with the code.
 */
export const schemaCommand: Command = async (args, _config, io) => {
  const print = PRINTS[args[0] ?? 'sdl']
  if (!print || args.length > 1) {
    io.err(`livegate schema: takes one of ${Object.keys(PRINTS).join(', ')}; got ${args.join(' ')}`)
    return 2
  }
  io.out(print(await buildGraphqlSchema()))
  return 0
}
