import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import type postgres from 'postgres'

/** An independent ceiling a bench measures livegate against, and how to stop it. */
export interface CeilingServer {
  url: string
  close(): Promise<void>
}

/** A GraphQL request as a ceiling reads it: only the operation's name and its variables. */
export interface CeilingRequest<V> {
  operationName?: string
  variables?: V
}

async function readBody<V>(request: IncomingMessage): Promise<CeilingRequest<V>> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return JSON.parse(Buffer.concat(chunks).toString('utf8')) as CeilingRequest<V>
}

/**
 * The ceilings' HTTP side, bare node:http: each request answered by one statement of `answer`
 * whose one value (`body`) is the response, written as PostgreSQL gives it. `sql` is the
 * ceiling's own pool, ended with the server.
 */
export async function serveCeiling<V>(
  sql: postgres.Sql,
  answer: (request: CeilingRequest<V>) => Promise<readonly { body?: unknown }[]>,
): Promise<CeilingServer> {
  const server = createServer((request, response) => {
    readBody<V>(request)
      .then(answer)
      .then(([row]) => {
        const body = row?.body as string
        response.writeHead(200, {
          'content-type': 'application/json; charset=utf-8',
          'content-length': Buffer.byteLength(body),
        })
        response.end(body)
      })
      .catch((error: unknown) => {
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
