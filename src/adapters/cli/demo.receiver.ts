import { once } from 'node:events'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'

/** What the demo's receiver has taken in. */
export interface ReceiverReport {
  /** Deliveries whose signature verified, by event type. */
  byType: Record<string, number>
  verified: number
  /** Deliveries whose signature did not verify (answered 400). */
  refused: number
  /** The newest deliveries, newest first: id, type, task and when, and the verified payload as sent. */
  latest: Array<{ id: string; type: string; taskId: unknown; receivedAt: string; payload: unknown }>
}

/** A running receiver: where to send to, where to look, and how to stop it. */
export interface DemoReceiver {
  /** The address webhooks are sent to. */
  hookUrl: string
  /** The address that shows what came, as JSON. */
  reportUrl: string
  report(): ReceiverReport
  close(): Promise<void>
}

const LATEST = 50

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    request.on('error', reject)
  })
}

/**
 * The small webhook receiver `livegate demo` starts beside the gateway: it verifies every
 * delivery's Standard Webhooks signature with the `standardwebhooks` package, as a user's own
 * receiver would, and shows what it got at `/` (counts by type, the newest deliveries with their
 * payloads).
 */
export async function startDemoReceiver(secret: string, host = '127.0.0.1', port = 0): Promise<DemoReceiver> {
  const webhook = new Webhook(secret)
  const report: ReceiverReport = { byType: {}, verified: 0, refused: 0, latest: [] }
  const server: Server = createServer((request, response) => {
    void (async () => {
      if (request.method === 'GET' && request.url === '/') {
        response
          .writeHead(200, { 'content-type': 'application/json; charset=utf-8' })
          .end(JSON.stringify(report, null, 2))
        return
      }
      if (request.method !== 'POST' || request.url !== '/hooks') {
        response.writeHead(404).end()
        return
      }
      const body = await readBody(request)
      let event: { type: string; data?: { taskId?: unknown } }
      try {
        event = webhook.verify(body, request.headers as Record<string, string>) as typeof event
      } catch {
        report.refused += 1
        response.writeHead(400).end()
        return
      }
      report.verified += 1
      report.byType[event.type] = (report.byType[event.type] ?? 0) + 1
      // The whole payload, so a newcomer sees what a receiver of their own would get, not only counts.
      const delivery = {
        id: String(request.headers['webhook-id']),
        type: event.type,
        taskId: event.data?.taskId ?? null,
        receivedAt: new Date().toISOString(),
        payload: event,
      }
      report.latest.unshift(delivery)
      report.latest.length = Math.min(report.latest.length, LATEST)
      response.writeHead(204).end()
    })()
  })
  server.listen(port, host)
  await once(server, 'listening')
  const address = server.address() as AddressInfo
  const base = `http://${host}:${address.port}`
  return {
    hookUrl: `${base}/hooks`,
    reportUrl: `${base}/`,
    report: () => report,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
