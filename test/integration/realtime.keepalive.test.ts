import { once } from 'node:events'
import { createClient } from 'graphql-ws'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { send, signFor, TEST_CONFIG } from '../support/gateway.fixture.js'
import { metricValue, scrapeMetrics } from '../support/metrics.scrape.js'

// Long enough for a client on a loaded machine to answer a ping within one period.
const KEEP_ALIVE_MS = 400
const POLL = { timeout: 20_000, interval: 50 }
const FIELD = { field: 'notificationReceived' }

// Pings each socket has received, counted from its opening: the first may come before its acknowledgement.
const pingsOf = new WeakMap<WebSocket, number>()
const pings = (socket: WebSocket) => pingsOf.get(socket) ?? 0

/** A graphql-transport-ws socket that has been acknowledged; `autoPong: false` plays a client that is gone. */
async function acknowledged(gateway: Gateway, options: { autoPong: boolean }): Promise<WebSocket> {
  const socket = new WebSocket(`${gateway.url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws', options)
  socket.on('ping', () => pingsOf.set(socket, pings(socket) + 1))
  await once(socket, 'open')
  const acked = new Promise<void>((resolve) =>
    socket.on('message', (data) => {
      if ((JSON.parse(String(data)) as { type: string }).type === 'connection_ack') resolve()
    }),
  )
  socket.send(JSON.stringify({ type: 'connection_init' }))
  await acked
  return socket
}

async function started(db: TestDatabase, keepAliveMs: number): Promise<Gateway> {
  return startGateway(loadConfig({ env: {}, value: { ...TEST_CONFIG, realtime: { keepAliveMs } } }), {
    database: db.database,
  })
}

describe(`websocket keep-alive (${driverName})`, () => {
  let db: TestDatabase
  let gateway: Gateway
  let quiet: Gateway

  beforeAll(async () => {
    db = await openTestDatabase()
    gateway = await started(db, KEEP_ALIVE_MS)
    quiet = await started(db, 0)
  })

  afterAll(async () => {
    await gateway?.close()
    await quiet?.close()
    await db?.drop()
  })

  it('pings a socket every realtime.keepAliveMs and keeps it while it answers', async () => {
    const socket = await acknowledged(gateway, { autoPong: true })
    await expect.poll(() => pings(socket), POLL).toBeGreaterThanOrEqual(3)
    expect(socket.readyState).toBe(WebSocket.OPEN)
    socket.close()
  })

  it('terminates a socket that did not answer its last ping by the next, and only that one', async () => {
    const alive = await acknowledged(gateway, { autoPong: true })
    const gone = await acknowledged(gateway, { autoPong: false })
    const [code] = (await once(gone, 'close')) as [number]
    // Terminated, not closed: a peer that does not answer would not read a close frame either.
    expect(code).toBe(1006)
    expect(pings(gone)).toBeGreaterThanOrEqual(1)
    expect(alive.readyState).toBe(WebSocket.OPEN)
    alive.close()
  })

  it('keeps a stock graphql-ws client at its defaults subscribed through its pings', async () => {
    let closed = 0
    const client = createClient({
      url: `${gateway.url.replace('http', 'ws')}/graphql`,
      webSocketImpl: WebSocket,
      on: { closed: () => void closed++ },
    })
    const received: string[] = []
    const unsubscribe = client.subscribe<{ notificationReceived: { taskId: string } }>(
      { query: 'subscription { notificationReceived { taskId } }' },
      {
        next: ({ data }) => void (data && received.push(data.notificationReceived.taskId)),
        error: () => {},
        complete: () => {},
      },
    )
    await expect
      .poll(async () => metricValue(await scrapeMetrics(gateway.url), 'livegate_subscriptions', FIELD), POLL)
      .toBe(1)
    // Several periods: a client that did not answer would have been terminated after two.
    await new Promise((resolve) => setTimeout(resolve, 6 * KEEP_ALIVE_MS))
    expect(
      (await send(signFor(gateway, sampleCallbacks('ka-stock').liveResume as Record<string, string>))).status,
    ).toBe(200)
    await expect.poll(() => received, POLL).toEqual(['ka-stock'])
    expect(closed).toBe(0)
    unsubscribe()
    await client.dispose()
  })

  it('pings nobody with realtime.keepAliveMs 0', async () => {
    const socket = await acknowledged(quiet, { autoPong: false })
    // Ten periods of the server that pings.
    await new Promise((resolve) => setTimeout(resolve, 10 * KEEP_ALIVE_MS))
    expect(pings(socket)).toBe(0)
    expect(socket.readyState).toBe(WebSocket.OPEN)
    socket.close()
  })
})
