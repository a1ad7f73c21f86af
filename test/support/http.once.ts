import { request } from 'node:http'

// node:cluster hands a connection to a worker over IPC; one handed to a worker the moment it is
// killed is never answered nor closed (the primary keeps its copy), so a real client's timeout is needed.
const SEND_LIMIT_MS = 15_000

/**
 * One request on a connection of its own, so that `serve`'s primary may hand it to any worker.
 * Never rejects: status 0 when the connection fails, hangs past the limit or closes before the
 * whole answer came, as a client that gave up sees it.
 */
export function sendOnce(
  url: string,
  method: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve) => {
    const sent = request(url, { method, headers, agent: false, timeout: SEND_LIMIT_MS }, (answer) => {
      let text = ''
      answer.on('data', (chunk: Buffer) => {
        text += chunk
      })
      answer.on('end', () => resolve({ status: answer.statusCode ?? 0, text }))
      answer.on('error', () => resolve({ status: 0, text }))
      answer.on('close', () => resolve({ status: answer.complete ? (answer.statusCode ?? 0) : 0, text }))
    })
    sent.on('error', () => resolve({ status: 0, text: '' }))
    sent.on('timeout', () => sent.destroy())
    sent.end(body)
  })
}
