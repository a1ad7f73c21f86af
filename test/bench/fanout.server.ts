import type WebSocket from 'ws'
import { WebSocketServer } from 'ws'
import { startBenchGateway } from './bench.gateway.js'
import { FANOUT_SERVICE, taskIdOf } from './fanout.client.js'
import { isBenchChild, residentSet, serveCommands } from './fanout.process.js'

/**
 * The server side of one fan-out figure, in a process of its own so its resident set is the
 * server's alone: livegate on a PostgreSQL database, or the bare `ws` broadcast baseline.
 */

interface StartArgs {
  mode: 'livegate' | 'baseline'
  databaseUrl?: string
}

let close: () => Promise<void> = async () => {}

async function startLivegate(databaseUrl: string): Promise<string> {
  const started = await startBenchGateway({ databaseUrl, service: FANOUT_SERVICE })
  close = started.close
  return started.gateway.url
}

/**
 * The ceiling: graphql-transport-ws handshakes answered by hand, then each event serialized
 * once, as a Buffer, and written to every subscribed socket.
 */
async function startBaseline(): Promise<{ url: string; publish: (k: number) => void }> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false })
  const subscribed = new Set<WebSocket>()
  wss.on('connection', (socket) => {
    socket.on('message', (data) => {
      const message = JSON.parse(String(data)) as { type: string; id?: string }
      if (message.type === 'connection_init') socket.send('{"type":"connection_ack"}')
      else if (message.type === 'subscribe') subscribed.add(socket)
    })
    socket.on('close', () => subscribed.delete(socket))
  })
  await new Promise((resolve) => wss.once('listening', resolve))
  const address = wss.address()
  const port = typeof address === 'object' && address ? address.port : 0
  let id = 1_000_000
  close = async () => {
    for (const socket of wss.clients) socket.terminate()
    await new Promise((resolve) => wss.close(resolve))
  }
  return {
    url: `http://127.0.0.1:${port}`,
    publish(k: number) {
      id++
      // The shape and size of livegate's answer to the bench's operation.
      const node = {
        __typename: 'LiveResumeNotification',
        id: String(id),
        type: 15,
        taskId: taskIdOf(k),
        serviceCode: 'TESTING',
        receivedAt: new Date().toISOString(),
        cursor: Buffer.from(`n1:${id}`).toString('base64url'),
      }
      const frame = Buffer.from(
        JSON.stringify({ id: '1', type: 'next', payload: { data: { notificationReceived: node } } }),
      )
      for (const socket of subscribed) socket.send(frame)
    },
  }
}

if (isBenchChild(import.meta.url)) {
  let publish: ((k: number) => void) | undefined
  serveCommands(
    async (command, args) => {
      if (command === 'start') {
        const { mode, databaseUrl } = args as StartArgs
        if (mode === 'livegate') return { url: await startLivegate(databaseUrl as string) }
        const baseline = await startBaseline()
        publish = baseline.publish
        return { url: baseline.url }
      }
      if (command === 'publish') return publish?.(args as number)
      if (command === 'rss') return residentSet()
      if (command === 'cpu') {
        const { user, system } = process.cpuUsage()
        return { user: user / 1000, system: system / 1000 }
      }
      throw new Error(`unknown command ${command}`)
    },
    () => close(),
  )
}
