import { readdirSync, readFileSync } from 'node:fs'
import { constants, PerformanceObserver } from 'node:perf_hooks'
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

/** The main thread's collector pauses so far, in milliseconds and counts: scavenges and full collections apart. */
const collections = { scavengeMs: 0, scavenges: 0, fullMs: 0, fulls: 0 }

function watchCollections(): void {
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as { detail?: { kind?: number } }).detail?.kind
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) {
        collections.scavenges++
        collections.scavengeMs += entry.duration
      } else {
        collections.fulls++
        collections.fullMs += entry.duration
      }
    }
  }).observe({ entryTypes: ['gc'] })
}

/** CPU so far (user + system, in clock ticks) of this process's threads, summed by thread name. */
function threadTicks(): Record<string, number> {
  const byName: Record<string, number> = {}
  for (const tid of readdirSync('/proc/self/task')) {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const key = tid === String(process.pid) ? 'main' : name
    byName[key] = (byName[key] ?? 0) + Number(fields[11]) + Number(fields[12])
  }
  return byName
}

if (isBenchChild(import.meta.url)) {
  watchCollections()
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
        return { user: user / 1000, system: system / 1000, ...collections, threads: threadTicks() }
      }
      throw new Error(`unknown command ${command}`)
    },
    () => close(),
  )
}
