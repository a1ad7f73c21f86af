import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import postgres from 'postgres'
import { smallQueryStatement, type TaskPageArgs, taskPageStatement } from './query.ceiling-sql.js'

/** The independent ceiling the query bench measures livegate against, and how to stop it. */
export interface CeilingServer {
  url: string
  close(): Promise<void>
}

// livegate's own pool size on a server, so neither side waits on connections the other has.
const CONNECTIONS = 10
const TASK_CURSOR = /^t1:(\d{1,15}):([1-9]\d{0,15})$/

interface Request {
  operationName?: string
  variables?: { first?: number; after?: string; filter?: { status?: string[] } }
}

function decodeTaskCursor(cursor: string): TaskPageArgs['after'] {
  const match = TASK_CURSOR.exec(Buffer.from(cursor, 'base64url').toString('utf8'))
  if (!match) throw new Error(`not a task cursor: ${cursor}`)
  return { sortAtMs: Number(match[1]), id: Number(match[2]) }
}

async function readBody(request: IncomingMessage): Promise<Request> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Request
}

/**
 * What the bench's operations cost at the SQL limit: bare node:http and postgres.js, no GraphQL
 * engine, no livegate code. It knows the bench's operations by name and answers each with one
 * statement whose one value is the response body, written as PostgreSQL gives it.
 */
export async function startCeiling(databaseUrl: string): Promise<CeilingServer> {
  // The statements are cheap but look costly to the planner (jsonb functions over sets), and JIT
  // compiling them took ten times longer than running them.
  const sql = postgres(databaseUrl, { max: CONNECTIONS, onnotice: () => {}, connection: { jit: 'off' } })
  const answer = async (request: IncomingMessage, response: ServerResponse) => {
    const { operationName, variables = {} } = await readBody(request)
    let statement
    if (operationName === 'TaskPage') {
      const after = variables.after ? decodeTaskCursor(variables.after) : undefined
      statement = taskPageStatement(sql, { first: variables.first ?? 50, after, status: variables.filter?.status })
    } else if (operationName === 'TaskList') {
      statement = smallQueryStatement(sql, variables.first ?? 20)
    } else {
      throw new Error(`the ceiling knows no operation ${operationName}`)
    }
    const [row] = await statement
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
