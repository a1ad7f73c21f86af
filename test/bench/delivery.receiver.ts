import { type ChildProcess, fork } from 'node:child_process'
import { createServer, type ServerResponse } from 'node:http'
import { fileURLToPath } from 'node:url'

/** What one path of a bench receiver took in since its last reset. */
export interface PathStats {
  /** Requests read, every attempt. */
  received: number
  /** Distinct `webhook-id`s among them. */
  distinct: number
  /** Requests whose answer never left (the receiver went down under them): a sender must try again. */
  lostAnswers: number
  /** When the last new id arrived (this machine's clock, ms). */
  lastNewAt: number
  /** For each first arrival of a `callback.*` event: arrival minus the callback's `receivedAt`, ms. */
  lagsMs: number[]
}

/** A fast webhook receiver in a process of its own, steered from the bench. */
export interface BenchReceiver {
  /** The base URL; endpoints post to `${url}/hooks/<name>`. */
  url: string
  stats(): Promise<Record<string, PathStats>>
  /** Distinct ids per path only: cheap enough to ask every few milliseconds. */
  counts(): Promise<Record<string, number>>
  reset(): Promise<void>
  /** Holds every request unanswered until {@link release}. */
  hold(): Promise<void>
  /** Answers what was held, and from then on at once; resolves with the time it did (ms). */
  release(): Promise<number>
  /** Stops listening and cuts every connection (answers under way are lost). */
  down(): Promise<void>
  /** Listens again on the same port. */
  up(): Promise<void>
  stop(): Promise<void>
}

type Command = 'stats' | 'counts' | 'reset' | 'hold' | 'release' | 'down' | 'up'

/**
 * Starts a receiver process: node:http on loopback that answers 204 at once, reading only the
 * headers it counts by and, for callback events, the `timestamp` the lag is measured from. It
 * verifies no signature (a fast receiver; the delivery tests verify them), so what it costs the
 * machine is as little as a receiver can.
 */
export function startBenchReceiver(): Promise<BenchReceiver> {
  return new Promise((resolve, reject) => {
    const child: ChildProcess = fork(fileURLToPath(import.meta.url), [RECEIVER_CHILD], {
      execArgv: ['--import', 'tsx'],
      stdio: 'inherit',
    })
    let asked = 0
    const waiting = new Map<number, (value: unknown) => void>()
    const ask = (command: Command) =>
      new Promise<unknown>((answer) => {
        const id = ++asked
        waiting.set(id, answer)
        child.send({ id, command })
      })
    child.on('message', (message: { id?: number; listening?: string; value?: unknown }) => {
      if (message.listening) {
        resolve({
          url: message.listening,
          stats: () => ask('stats') as Promise<Record<string, PathStats>>,
          counts: () => ask('counts') as Promise<Record<string, number>>,
          reset: async () => void (await ask('reset')),
          hold: async () => void (await ask('hold')),
          release: () => ask('release') as Promise<number>,
          down: async () => void (await ask('down')),
          up: async () => void (await ask('up')),
          async stop() {
            if (child.exitCode !== null) return
            const exited = new Promise((done) => child.once('exit', done))
            child.kill('SIGKILL')
            await exited
          },
        })
        return
      }
      waiting.get(message.id as number)?.(message.value)
      waiting.delete(message.id as number)
    })
    child.once('error', reject)
  })
}

const RECEIVER_CHILD = '--livegate-bench-receiver'

if (process.argv.includes(RECEIVER_CHILD) && process.send) runReceiver()

function runReceiver(): void {
  const paths = new Map<string, PathStats & { ids: Set<string> }>()
  let held: Array<() => void> | undefined
  const server = createServer((request, response: ServerResponse) => {
    const path = request.url ?? '/'
    let stats = paths.get(path)
    if (!stats) {
      stats = { received: 0, distinct: 0, lostAnswers: 0, lastNewAt: 0, lagsMs: [], ids: new Set() }
      paths.set(path, stats)
    }
    const own = stats
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const arrivedAt = Date.now()
      own.received += 1
      const id = String(request.headers['webhook-id'] ?? '')
      if (!own.ids.has(id)) {
        own.ids.add(id)
        own.distinct += 1
        own.lastNewAt = arrivedAt
        // Only a callback's timestamp is when it reached livegate; a derived event's is the cloud's time.
        if (id.startsWith('cb_')) {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { timestamp: string }
          own.lagsMs.push(arrivedAt - Date.parse(body.timestamp))
        }
      }
      response.on('close', () => {
        if (!response.writableFinished) own.lostAnswers += 1
      })
      const answer = () => response.writeHead(204).end()
      if (held) held.push(answer)
      else answer()
    })
  })
  let port = 0
  const commands: Record<Command, () => unknown> = {
    stats: () => Object.fromEntries([...paths].map(([path, { ids: _ids, ...stats }]) => [path, stats])),
    counts: () => Object.fromEntries([...paths].map(([path, stats]) => [path, stats.distinct])),
    reset: () => paths.clear(),
    hold: () => {
      held ??= []
    },
    release: () => {
      const releasedAt = Date.now()
      const answers = held ?? []
      held = undefined
      for (const answer of answers) answer()
      return releasedAt
    },
    down: () =>
      new Promise<void>((done) => {
        server.close(() => done())
        server.closeAllConnections()
      }),
    up: () => new Promise<void>((done) => server.listen(port, '127.0.0.1', () => done())),
  }
  process.on('message', (message: { id: number; command: Command }) => {
    void Promise.resolve(commands[message.command]()).then((value) => process.send?.({ id: message.id, value }))
  })
  server.keepAliveTimeout = 60_000
  server.listen(0, '127.0.0.1', () => {
    const address = server.address()
    port = typeof address === 'object' && address ? address.port : 0
    process.send?.({ listening: `http://127.0.0.1:${port}` })
  })
}
