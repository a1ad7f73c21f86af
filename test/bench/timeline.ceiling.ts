import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import postgres from 'postgres'
import type { CeilingServer } from './query.ceiling.js'
import { timelineStatement } from './timeline.ceiling-sql.js'

// livegate's own pool size on a server, so neither side waits on connections the other has.
const CONNECTIONS = 10

interface Request {
  operationName?: string
  variables?: { id?: string; first?: number }
}

/** A task's global id read as the schema documents it: `Task:` then its key as a JSON array. */
function taskKey(id: string): [serviceCode: string, taskId: string] {
  const text = Buffer.from(id, 'base64url').toString('utf8')
  if (!text.startsWith('Task:')) throw new Error(`not a task id: ${id}`)
  const key = JSON.parse(text.slice('Task:'.length)) as unknown
  if (!Array.isArray(key) || key.length !== 2) throw new Error(`not a task id: ${id}`)
  return [String(key[0]), String(key[1])]
}

async function readBody(request: IncomingMessage): Promise<Request> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Request
}

/**
 * What `Task.timeline` costs at the SQL limit: bare node:http and postgres.js, no GraphQL engine,
 * no livegate code, one statement per request whose one value is the response body.
 */
export async function startTimelineCeiling(databaseUrl: string): Promise<CeilingServer> {
  // As the query bench's ceiling: JIT compiling these statements costs more than running them.
  const sql = postgres(databaseUrl, { max: CONNECTIONS, onnotice: () => {}, connection: { jit: 'off' } })
  const answer = async (request: IncomingMessage, response: ServerResponse) => {
    const { operationName, variables = {} } = await readBody(request)
    if (operationName !== 'TaskTimeline') throw new Error(`the ceiling knows no operation ${operationName}`)
    const [serviceCode, taskId] = taskKey(variables.id ?? '')
    const [row] = await timelineStatement(sql, serviceCode, taskId, variables.first ?? 100)
    const body = row?.body as string
    response.writeHead(200, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
    })
    response.end(body)
  }
  const server = createServer((request, response) => {
    answer(request, response).catch((error: unknown) => {
      response.writeHead(500, { 'content-type': 'text/plain' })
      response.end(String(error))
    })
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await sql.end()
    },
  }
}
