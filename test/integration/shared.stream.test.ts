import type { AddressInfo } from 'node:net'
import type { Duplex } from 'node:stream'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { WebSocket, WebSocketServer } from 'ws'
import { SharedResults } from '../../src/adapters/websocket/shared.results.js'
import { sharedStream, type StreamTarget } from '../../src/adapters/websocket/shared.stream.js'
import { SubscriberTooSlow, SubscriptionQueue } from '../../src/work/realtime/subscription.queue.js'

// A subscriber's queue and the stream that writes its events to a real socket on loopback:
// order, the hand-over from reading to direct delivery, the bound on an unread subscriber.

let server: WebSocketServer
let url: string
const open: WebSocket[] = []

beforeAll(async () => {
  server = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false })
  await new Promise((resolve) => server.once('listening', resolve))
  url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterEach(() => {
  for (const socket of open.splice(0)) socket.terminate()
})
afterAll(() => new Promise((resolve) => server.close(resolve)))

/** A connected pair: the server's side (and the TCP socket under it) and what the client reads. */
async function connect(): Promise<{ socket: WebSocket; transport: Duplex; received: unknown[] }> {
  const accepted = new Promise<[WebSocket, Duplex]>((resolve) =>
    server.once('connection', (socket, request) => resolve([socket, request.socket])),
  )
  const client = new WebSocket(url)
  const received: unknown[] = []
  client.on('message', (data) => received.push(JSON.parse(String(data))))
  open.push(client)
  const [socket, transport] = await accepted
  return { socket, transport, received }
}

const payload = (event: unknown) => Buffer.from(`${JSON.stringify({ data: event })}}`)

function target(
  socket: WebSocket,
  transport: Duplex,
  resultOf: StreamTarget['resultOf'],
  limit = 100,
): StreamTarget & { overflows: number } {
  const made = {
    socket,
    transport,
    id: 'op',
    resultOf,
    delivered: () => {},
    limit,
    overflow: () => made.overflows++,
    overflows: 0,
  }
  return made
}

describe('SubscriptionQueue', () => {
  it('keeps what waits up to its bound, then ends once and tells its reader it was too slow', async () => {
    let closes = 0
    const queue = new SubscriptionQueue<number>(2, () => closes++)
    queue.push(1)
    queue.push(2)
    expect(queue.size).toBe(2)
    queue.push(3)
    queue.push(4)
    expect({ closes, size: queue.size }).toEqual({ closes: 1, size: 0 })
    await expect(queue.next()).rejects.toBeInstanceOf(SubscriberTooSlow)
  })

  it('hands over directly only while nothing waits, and tells a failure to the reader', async () => {
    const queue = new SubscriptionQueue<number>(10, () => {})
    queue.push(1)
    expect(
      queue.direct(
        () => {},
        () => {},
      ),
    ).toBe(false)
    expect(await queue.next()).toEqual({ value: 1, done: false })
    const taken: number[] = []
    let ended: Error | undefined | null = null
    expect(
      queue.direct(
        (item) => taken.push(item),
        (failure) => (ended = failure),
      ),
    ).toBe(true)
    queue.push(2)
    queue.push(3)
    queue.fail(new Error('the hub stopped'))
    expect(taken).toEqual([2, 3])
    expect(ended).toEqual(new Error('the hub stopped'))

    const read = new SubscriptionQueue<number>(10, () => {})
    const waiting = read.next()
    read.fail(new Error('gone'))
    await expect(waiting).rejects.toThrow('gone')
  })
})

describe('sharedStream', () => {
  it('writes a live queue’s events as they are pushed, in order, even while a result is computed', async () => {
    const { socket, transport, received } = await connect()
    const queue = new SubscriptionQueue<{ n: number }>(10, () => {})
    let settle: () => void = () => {}
    const shared = new SharedResults()
    // Event 2's resolvers take a while: its result is a payload still computed.
    const execute = (value: unknown) => {
      const result = { data: value as { n: number } }
      return (value as { n: number }).n === 2
        ? new Promise<typeof result>((resolve) => (settle = () => resolve(result)))
        : result
    }
    const operation = shared.operation('A')
    const resultOf = (event: unknown) => shared.resultOf(operation, event, execute)
    const stream = sharedStream(queue, target(socket, transport, resultOf))
    const done = stream.next()
    // The stream takes the queue over at once: nothing waited in it.
    queue.push({ n: 1 })
    queue.push({ n: 2 })
    queue.push({ n: 3 })
    await expect.poll(() => received.length).toBe(1)
    settle()
    await expect
      .poll(() => received)
      .toEqual([1, 2, 3].map((n) => ({ id: 'op', type: 'next', payload: { data: { n } } })))
    queue.close()
    expect(await done).toEqual({ value: undefined, done: true })
  })

  it('sends a batch longer than its bound to a subscriber that reads, whole, in order, and keeps it', async () => {
    const { socket, transport, received } = await connect()
    const queue = new SubscriptionQueue<{ n: number }>(100, () => {})
    // At most 3 messages may wait in the socket; a batch of 10 is held by the stream itself, not stuck.
    const made = target(socket, transport, (event) => payload(event), 3)
    const done = sharedStream(queue, made).next()
    queue.pushAll(Array.from({ length: 10 }, (_, i) => ({ n: i + 1 })))
    await expect
      .poll(() => received.map((message) => (message as { payload: unknown }).payload))
      .toEqual(Array.from({ length: 10 }, (_, i) => ({ data: { n: i + 1 } })))
    expect(made.overflows).toBe(0)
    queue.close()
    expect(await done).toEqual({ value: undefined, done: true })
  })

  it('reads a source that cannot hand over (a replay) one event at a time', async () => {
    const { socket, transport, received } = await connect()
    async function* replay() {
      for (let n = 1; n <= 3; n++) yield { n }
    }
    const stream = sharedStream(
      replay(),
      target(socket, transport, (event) => payload(event)),
    )
    expect(await stream.next()).toEqual({ value: undefined, done: true })
    await expect
      .poll(() => received.map((message) => (message as { payload: unknown }).payload))
      .toEqual([1, 2, 3].map((n) => ({ data: { n } })))
  })

  it('ends a source whose subscriber is ended, and writes nothing after', async () => {
    const { socket, transport, received } = await connect()
    let closes = 0
    const queue = new SubscriptionQueue<{ n: number }>(10, () => closes++)
    const stream = sharedStream(
      queue,
      target(socket, transport, (event) => payload(event)),
    )
    const done = stream.next()
    queue.push({ n: 1 })
    await stream.return?.()
    queue.push({ n: 2 })
    expect(await done).toEqual({ value: undefined, done: true })
    expect(closes).toBe(1)
    await expect.poll(() => received.length).toBe(1)
  })
})
