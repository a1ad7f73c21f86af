import WebSocket from 'ws'
import { isBenchChild, serveCommands, openInWaves } from './fanout.process.js'

/**
 * A bench child holding many graphql-transport-ws subscribers, each opened with a token of the
 * plan's (round-robin), spoken by hand over `ws`. It records when and how the server closed each
 * socket, so the parent can set each close beside its token's `exp`.
 */

/** What the parent asks one client process to open. */
export interface ExpiryPlan {
  url: string
  sockets: number
  /** Tokens handed round-robin to the sockets, each sent as `Bearer <token>` in `connection_init`. */
  tokens: string[]
  query: string
}

/** What a client process reports. */
export interface ExpiryStatus {
  open: number
  acknowledged: number
  closed: number
  /** Sockets closed by the server, by close code. */
  closes: Record<string, number>
  errors: number
}

/** Each socket's close: its code (0 while open) and when (wall-clock ms), and which token it used. */
export interface ExpiryCloses {
  codes: number[]
  closedAt: number[]
  token: number[]
  /** 1 where the socket was acknowledged before it closed (its token was accepted). */
  acknowledged: number[]
}

const CONNECTING_AT_ONCE = 100

let plan: ExpiryPlan
let sockets: WebSocket[] = []
let codes = new Int32Array(0)
let closedAt = new Float64Array(0)
let acked = new Uint8Array(0)
const status: ExpiryStatus = { open: 0, acknowledged: 0, closed: 0, closes: {}, errors: 0 }

function open(index: number): Promise<void> {
  return new Promise((resolve) => {
    const socket = new WebSocket(`${plan.url.replace(/^http/, 'ws')}/graphql`, 'graphql-transport-ws', {
      perMessageDeflate: false,
    })
    sockets[index] = socket
    const token = plan.tokens[index % plan.tokens.length]
    socket.on('open', () => {
      status.open++
      socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } }))
    })
    socket.on('message', (data: Buffer) => {
      const text = data.toString()
      if (text.includes('"connection_ack"')) {
        status.acknowledged++
        acked[index] = 1
        socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: plan.query } }))
        resolve()
      } else if (!text.includes('"ping"') && !text.includes('"pong"')) status.errors++
    })
    socket.on('close', (code) => {
      closedAt[index] = Date.now()
      codes[index] = code
      status.closed++
      status.closes[code] = (status.closes[code] ?? 0) + 1
      resolve()
    })
    socket.on('error', () => {
      status.errors++
      resolve()
    })
  })
}

function openAll(): Promise<void> {
  return openInWaves(plan.sockets, CONNECTING_AT_ONCE, open)
}

if (isBenchChild(import.meta.url)) {
  serveCommands(
    async (command, args) => {
      if (command === 'open') {
        plan = args as ExpiryPlan
        sockets = new Array(plan.sockets)
        codes = new Int32Array(plan.sockets)
        closedAt = new Float64Array(plan.sockets)
        acked = new Uint8Array(plan.sockets)
        await openAll()
        return status
      }
      if (command === 'status') return status
      if (command === 'closes') {
        const token = Array.from({ length: plan.sockets }, (_, index) => index % plan.tokens.length)
        const acknowledged = Array.from(acked)
        return { codes: Array.from(codes), closedAt: Array.from(closedAt), token, acknowledged } satisfies ExpiryCloses
      }
      throw new Error(`unknown command ${command}`)
    },
    async () => {
      for (const socket of sockets) socket?.terminate()
    },
  )
}
