import { once } from 'node:events'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { SLOW_CONSUMER_CLOSE } from '../../src/adapters/websocket/ws.server.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { send, signFor, TEST_CONFIG } from '../support/gateway.fixture.js'
import { metricValue, scrapeMetrics } from '../support/metrics.scrape.js'

const subscriptionGauge = async (url: string) =>
  metricValue(await scrapeMetrics(url), 'livegate_subscriptions', { field: 'notificationReceived' })

// Each event repeats the fields (with an 8 KiB value) under many aliases: about 400 KiB a
// message, so a few dozen fill the socket buffers of a client that stopped reading.
const BIG_EVENT = `subscription { notificationReceived { id
  ${Array.from({ length: 50 }, (_, i) => `f${i}: fields`).join(' ')} } }`

describe(`a subscriber that stops reading is cut off, not buffered without bound (${driverName})`, () => {
  let db: TestDatabase
  let gateway: Gateway

  beforeAll(async () => {
    db = await openTestDatabase()
    gateway = await startGateway(
      loadConfig({
        env: {},
        value: { ...TEST_CONFIG, realtime: { subscriberBuffer: 5 }, graphql: { maxAliases: 100 } },
      }),
      { database: db.database },
    )
  })

  afterAll(async () => {
    await gateway?.close()
    await db?.drop()
  })

  it(`closes its socket with ${SLOW_CONSUMER_CLOSE.code}` +
    ` once its buffer is full, and keeps serving others`, async () => {
    const socket = new WebSocket(`${gateway.url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws')
    await once(socket, 'open')
    const closed = once(socket, 'close') as Promise<[number, Buffer]>
    let received = 0
    socket.on('message', (data) => {
      const message = JSON.parse(String(data)) as { type: string }
      if (message.type === 'connection_ack')
        socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: BIG_EVENT } }))
      if (message.type === 'next') received++
    })
    socket.send(JSON.stringify({ type: 'connection_init' }))

    // Wait for the first event, then stop reading: the kernel buffers fill, then the server's queue.
    const big = 'x'.repeat(8 * 1024)
    let n = 0
    const deliver = () =>
      send(
        signFor(gateway, { ...sampleCallbacks(`slow-${n}`).liveResume, seq: String(n++), opaque: big } as Record<
          string,
          string
        >),
      )
    await expect
      .poll(
        async () => {
          await deliver()
          return received
        },
        { timeout: 10_000, interval: 200 },
      )
      .toBeGreaterThan(0)
    ;(socket as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause()

    const before = received
    let sent = 0
    let cut = false
    // Keep publishing, never reading, until the server drops the subscription (bounded in count).
    for (let i = 0; i < 400 && !cut; i++) {
      expect((await deliver()).status).toBe(200)
      sent++
      if (i % 10 === 9) cut = (await subscriptionGauge(gateway.url)) === 0
    }
    expect(cut, `still subscribed after ${sent} unread events`).toBe(true)
    // Events after the cut are kept but go to no one: what was written before it may all arrive
    // (the server closes gracefully, after what it had queued), these never do.
    const afterCut = 3
    for (let i = 0; i < afterCut; i++) {
      expect((await deliver()).status).toBe(200)
      sent++
    }
    // Reading again lets the client see the close frame the server sent.
    ;(socket as unknown as { _socket: { resume(): void } })._socket.resume()
    const [code, reason] = await closed
    expect(code).toBe(SLOW_CONSUMER_CLOSE.code)
    expect(String(reason)).toBe(SLOW_CONSUMER_CLOSE.reason)
    expect(received - before).toBeLessThanOrEqual(sent - afterCut)

    // Ingest and other subscribers are unaffected.
    expect((await deliver()).status).toBe(200)
  }, 300_000)
})
