import WebSocket from 'ws'
import { isBenchChild, serveCommands, openInWaves } from './fanout.process.js'

/**
 * A bench child holding many graphql-transport-ws subscribers, spoken by hand over `ws` so the
 * client stays lean: each `next` frame is stamped the moment it arrives, then only its task id
 * is read (no JSON parse), to know which event it was.
 */

/** The service the bench signs its callbacks for. */
export const FANOUT_SERVICE = { serviceCode: 'TESTING', secret: 'fanout-secret' } as const

/** The task id of measured event `k` (k ≥ 0) or of warm-up probe `-1 - n`: what clients read back. */
export function taskIdOf(k: number): string {
  return k >= 0 ? `fo-e${k}` : `fo-p${-1 - k}`
}

/** What the parent asks one client process to open. */
export interface ClientPlan {
  url: string
  sockets: number
  /** Subscribe payloads, handed round-robin to the sockets. */
  operations: Array<{ query: string; variables?: Record<string, unknown> }>
  /** How many measured events the figure publishes. */
  events: number
}

/** What a client process reports while a figure runs. */
export interface ClientStatus {
  open: number
  subscribed: number
  /** Sockets that received at least one warm-up probe. */
  probed: number
  /** Measured events received, over all sockets. */
  received: number
  /** Sockets closed by the server, by close code. */
  closes: Record<string, number>
  /** `error` or unexpected messages. */
  errors: number
}

// Wall-clock milliseconds with sub-millisecond resolution, comparable across processes on one machine.
const now = () => performance.timeOrigin + performance.now()

const TASK_MARK = Buffer.from('"taskId":"fo-')
const CONNECTING_AT_ONCE = 200

let plan: ClientPlan
let sockets: WebSocket[] = []
// Arrival time of measured event k on socket s at [k * sockets + s]; 0 while not (yet) received.
let arrivals = new Float64Array(0)
const status: ClientStatus = { open: 0, subscribed: 0, probed: 0, received: 0, closes: {}, errors: 0 }

function onFrame(index: number, probed: { done: boolean }, data: Buffer): void {
  const at = now()
  const mark = data.indexOf(TASK_MARK)
  if (mark < 0) {
    const text = data.toString()
    if (text.includes('"connection_ack"')) {
      sockets[index]?.send(
        JSON.stringify({ id: '1', type: 'subscribe', payload: plan.operations[index % plan.operations.length] }),
      )
      status.subscribed++
    } else if (!text.includes('"pong"') && !text.includes('"ping"')) status.errors++
    return
  }
  let at0 = mark + TASK_MARK.length
  const kind = data[at0++]
  let k = 0
  for (let c = data[at0] as number; c >= 48 && c <= 57; c = data[++at0] as number) k = k * 10 + c - 48
  if (kind === 0x70 /* p: a probe */) {
    if (!probed.done) {
      probed.done = true
      status.probed++
    }
    return
  }
  if (k >= plan.events) return
  const slot = k * plan.sockets + index
  if (arrivals[slot] === 0) status.received++
  else status.errors++
  arrivals[slot] = at
}

function open(index: number): Promise<void> {
  return new Promise((resolve) => {
    const socket = new WebSocket(plan.url.replace(/^http/, 'ws') + '/graphql', 'graphql-transport-ws', {
      perMessageDeflate: false,
      skipUTF8Validation: true,
    })
    sockets[index] = socket
    const probed = { done: false }
    socket.on('open', () => {
      status.open++
      socket.send('{"type":"connection_init","payload":{}}')
      resolve()
    })
    socket.on('message', (data: Buffer) => onFrame(index, probed, data))
    socket.on('close', (code) => {
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

/** Latencies (arrival minus the publisher's send time) of every measured event received. */
function latencies(sentAt: number[]): Float64Array {
  const out = new Float64Array(status.received)
  let n = 0
  for (let k = 0; k < plan.events; k++) {
    const sent = sentAt[k] as number
    for (let s = 0; s < plan.sockets; s++) {
      const at = arrivals[k * plan.sockets + s] as number
      if (at !== 0 && n < out.length) out[n++] = at - sent
    }
  }
  return out.subarray(0, n)
}

if (isBenchChild(import.meta.url)) {
  serveCommands(
    async (command, args) => {
      if (command === 'open') {
        plan = args as ClientPlan
        sockets = new Array(plan.sockets)
        arrivals = new Float64Array(plan.events * plan.sockets)
        await openAll()
        return status
      }
      if (command === 'status') return status
      if (command === 'latencies') return latencies(args as number[])
      throw new Error(`unknown command ${command}`)
    },
    async () => {
      for (const socket of sockets) socket?.terminate()
    },
  )
}
