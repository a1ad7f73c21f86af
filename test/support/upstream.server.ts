import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

/** A task_list stand-in of the test's own: it records every request and answers as told. */
export interface FakeUpstream {
  url: string
  /** When each request arrived (performance.now()), in order. */
  arrivals: number[]
  /** Requests that have arrived and not been answered. */
  pending(): number
  /** How the next requests are answered: a status and body, or never. */
  answer(next: 'never' | { status: number; body: string }): void
  close(): Promise<void>
}

/** Starts a fake upstream on a free port; it answers `{"ret":0,"task_list":[],"user_list":[]}` until told otherwise. */
export async function startFakeUpstream(): Promise<FakeUpstream> {
  let next: 'never' | { status: number; body: string } = {
    status: 200,
    body: '{"ret":0,"task_list":[],"user_list":[]}',
  }
  const arrivals: number[] = []
  const waiting = new Set<ServerResponse>()
  const sockets = new Set<Socket>()
  const server = createServer((_request: IncomingMessage, response: ServerResponse) => {
    arrivals.push(performance.now())
    if (next === 'never') {
      waiting.add(response)
      response.on('close', () => waiting.delete(response))
      return
    }
    response.writeHead(next.status, { 'content-type': 'application/json' }).end(next.body)
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arrivals,
    pending: () => waiting.size,
    answer: (answer) => {
      next = answer
    },
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
