import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket, { WebSocketServer } from 'ws'
import { nextWriter } from '../../src/adapters/websocket/next.writer.js'

// The writer frames messages itself: a real `ws` client must read back exactly what was meant,
// at every length where the frame header changes shape (7-bit, 16-bit and 64-bit lengths).
describe('nextWriter frames graphql-ws next messages a ws client reads back exactly', () => {
  let server: WebSocketServer
  let url: string

  beforeAll(async () => {
    server = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false })
    await once(server, 'listening')
    url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`
  })

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve))
  })

  it('at each header boundary, with multi-byte text, in order with messages ws sends itself', async () => {
    const prefixLength = Buffer.byteLength('{"id":"é1","type":"next","payload":')
    // Payload byte lengths chosen so that whole messages land on either side of 125/126 and 65535/65536.
    const sizes = [
      2,
      125 - prefixLength,
      126 - prefixLength,
      300,
      65_535 - prefixLength,
      65_536 - prefixLength,
      200_000,
    ]
    const payloads = sizes.map((size, i) => {
      // `"…"}`: a JSON string of `size` bytes in all, with a 2-byte character where there is room.
      const filler = size >= 6 ? `é${'x'.repeat(size - 6)}` : ''
      return Buffer.from(size >= 6 ? `"${filler}"}` : `${i}}`)
    })
    server.once('connection', (socket, request) => {
      // The TCP socket the client was upgraded from: the upgrade request's own.
      const next = nextWriter(socket, 'é1', request.socket)
      payloads.forEach((payload, i) => {
        next.write(payload)
        if (i === 2) socket.send('{"type":"ping"}')
      })
      next.write(Buffer.from('null}'), () => socket.send('{"type":"done"}'))
    })
    const client = new WebSocket(url)
    const received: string[] = []
    const done = new Promise<void>((resolve, reject) => {
      client.on('message', (data, binary) => {
        if (binary) return reject(new Error('a binary frame'))
        const text = String(data)
        if (text === '{"type":"done"}') return resolve()
        received.push(text)
      })
      client.on('error', reject)
    })
    await done
    client.close()

    const expected = payloads.map((payload) => `{"id":"é1","type":"next","payload":${payload.toString()}`)
    expected.splice(3, 0, '{"type":"ping"}')
    expected.push('{"id":"é1","type":"next","payload":null}')
    expect(received.map((text) => text.length)).toEqual(expected.map((text) => text.length))
    expect(received).toEqual(expected)
    for (const text of received) expect(() => JSON.parse(text)).not.toThrow()
  })

  it('holds a batch until it is released, then sends it whole, in order with what ws sends itself', async () => {
    const held: number[] = []
    server.once('connection', (socket, request) => {
      const next = nextWriter(socket, '7', request.socket)
      for (let k = 0; k < 5; k++) next.write(Buffer.from(`${k}}`), undefined, true)
      socket.send('{"type":"ping"}')
      // Held: nothing has left for the socket until the batch is released.
      held.push(request.socket.writableLength)
      next.release()
      held.push(request.socket.writableLength)
      next.write(Buffer.from('5}'))
      socket.send('{"type":"done"}')
    })
    const client = new WebSocket(url)
    const received: string[] = []
    await new Promise<void>((resolve, reject) => {
      client.on('message', (data) => {
        const text = String(data)
        if (text === '{"type":"done"}') resolve()
        else received.push(text)
      })
      client.on('error', reject)
    })
    client.close()
    const frame = (k: number) => `{"id":"7","type":"next","payload":${k}}`
    expect(received).toEqual([0, 1, 2, 3, 4].map(frame).concat('{"type":"ping"}', frame(5)))
    expect(held[0]).toBeGreaterThan(0)
    expect(held[1]).toBe(0)
  })
})
