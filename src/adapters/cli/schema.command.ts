import { buildGraphqlSchema, printGraphqlSchema } from '../graphql/schema.build.js'
import type { Command } from './cli.run.js'

/**
 * `livegate schema`: prints the GraphQL schema (SDL) that the gateway serves. `npm run
 * schema:emit` writes it to schema/schema.graphql, the committed contract a test compares
 * with the code.
 */
export const schemaCommand: Command = async (args, _config, io) => {
  if (args.length > 0) {
    io.err(`livegate schema: takes no arguments; got ${args.join(' ')}`)
    return 2
  }
  io.out(printGraphqlSchema(await buildGraphqlSchema()))
  return 0
}
