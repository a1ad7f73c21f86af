import { once } from 'node:events'
import { join } from 'node:path'
import { ROOT, type ServeProcess, startListeningProcess } from './livegate.process.js'

/** The secret the test endpoints sign with and the receiver verifies with. */
export const WEBHOOK_SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`

/** A delivery as the receiver recorded it. */
export interface Receipt {
  path: string
  /** The Authorization header, if one was sent (Basic, from a URL with credentials). */
  authorization: string | null
  id: string
  timestamp: string
  verified: boolean
  error: string | null
  answered: number | 'hang'
  body: {
    type: string
    timestamp: string
    position: { log: string; xid: string; id: number }
    data: Record<string, unknown>
  }
}

/** How the receiver answers one delivery. */
export type PlannedAnswer = { status: number; retryAfter?: string | number } | { hang: true }

/** The receiver process (test/fixtures/webhook.receiver.mjs), and how to steer and read it. */
export interface Receiver {
  url: string
  port: number
  received(path?: string): Promise<Receipt[]>
  plan(path: string, answers: PlannedAnswer[]): Promise<void>
  stop(): Promise<void>
}

/** Starts a receiver that verifies with {@link WEBHOOK_SECRET}; on a given port to start one again where it was. */
export async function startReceiver(port = 0): Promise<Receiver> {
  const started: ServeProcess = await startListeningProcess(
    [join(ROOT, 'test/fixtures/webhook.receiver.mjs')],
    { ...process.env, WEBHOOK_SECRET, PORT: String(port) },
    /receiver listening on (http:\/\/\S+)/,
  )
  const url = started.url
  return {
    url,
    port: Number(new URL(url).port),
    async received(path) {
      const all = (await (await fetch(`${url}/received`)).json()) as Receipt[]
      return path ? all.filter((receipt) => receipt.path === path) : all
    },
    async plan(path, answers) {
      await fetch(`${url}/plan`, { method: 'POST', body: JSON.stringify({ path, answers }) })
    },
    async stop() {
      if (started.process.exitCode !== null) return
      started.process.kill('SIGKILL')
      await once(started.process, 'exit')
    },
  }
}
