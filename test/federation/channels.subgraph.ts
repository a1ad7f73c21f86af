// A second subgraph for the composition test: a small "channels" service of a company that knows
// streams only by the cloud's own key (serviceCode, taskId). It extends livegate's `Task` with a
// `channel` of its own. @apollo/subgraph over a plain node:http server, run as its own process:
// `node --import tsx test/federation/channels.subgraph.ts` prints the address it listens on.
import { createServer } from 'node:http'
import { buildSubgraphSchema } from '@apollo/subgraph'
import { graphql, parse } from 'graphql'
import { CHANNELS, CHANNELS_SDL } from './channels.sdl.js'

type TaskKey = { serviceCode: string; taskId: string }
const channelOf = (task: TaskKey) =>
  CHANNELS.find((channel) => channel.serviceCode === task.serviceCode && channel.taskId === task.taskId) ?? null

const schema = buildSubgraphSchema({
  typeDefs: parse(CHANNELS_SDL),
  resolvers: {
    Query: { channels: () => CHANNELS },
    Channel: { task: (channel: TaskKey) => ({ serviceCode: channel.serviceCode, taskId: channel.taskId }) },
    Task: {
      __resolveReference: (task: TaskKey) => task,
      channel: (task: TaskKey) => channelOf(task),
    },
  } as never,
})

const server = createServer((request, response) => {
  let body = ''
  request.on('data', (chunk: Buffer) => {
    body += chunk
  })
  request.on('end', () => {
    const { query, variables, operationName } = JSON.parse(body || '{}') as {
      query?: string
      variables?: Record<string, unknown>
      operationName?: string
    }
    void graphql({
      schema,
      source: query ?? '',
      variableValues: variables ?? null,
      operationName: operationName ?? null,
    }).then((result) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(JSON.stringify(result))
    })
  })
})
server.listen(0, '127.0.0.1', () => {
  const address = server.address()
  if (typeof address === 'object' && address)
    process.stdout.write(`channels listening on http://127.0.0.1:${address.port}/graphql\n`)
})
process.once('SIGTERM', () => server.close(() => process.exit(0)))
