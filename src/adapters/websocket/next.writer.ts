import type { Duplex } from 'node:stream'
import type WebSocket from 'ws'

/** Writes one subscriber's `next` messages; see {@link nextWriter}. */
export interface NextWriter {
  /**
   * Writes the message whose payload is `payload` (the shared result's JSON and the message's
   * closing brace, as bytes). `written`, if given, is told once the bytes have left for the socket.
   * `hold`: one of a batch (the engine handed out a burst of events at once): it waits for
   * {@link NextWriter.release}, and the batch leaves in one system call.
   */
  write(payload: Buffer, written?: () => void, hold?: boolean): void
  /** Sends what `write` held. */
  release(): void
  /**
   * How many bytes wait to leave for the socket (`ws`'s `bufferedAmount`, read where it is kept);
   * a batch held for {@link NextWriter.release} is not waiting, and is not counted.
   */
  buffered(): number
}

// Byte 0 of a final, unfragmented text frame; a server's frames are not masked.
const FIN_TEXT = 0x81

/** The frame header of a text message of `length` bytes, followed by `prefix`. */
function headed(prefix: Buffer, length: number): Buffer {
  const size = length < 126 ? 2 : length < 65536 ? 4 : 10
  const bytes = Buffer.allocUnsafe(size + prefix.length)
  bytes[0] = FIN_TEXT
  if (size === 2) bytes[1] = length
  else if (size === 4) {
    bytes[1] = 126
    bytes.writeUInt16BE(length, 2)
  } else {
    bytes[1] = 127
    bytes.writeUInt16BE(0, 2)
    bytes.writeUIntBE(length, 4, 6)
  }
  prefix.copy(bytes, size)
  return bytes
}

/**
 * A writer of graphql-ws `next` messages for operation `id` on `socket`, upgraded from `tcp` (the
 * socket Node's `upgrade` event handed the server, which gave it to `ws`). The message is the
 * subscriber's own prefix (`{"id":…,"type":"next","payload":`) and the payload bytes shared by
 * every subscriber of the operation.
 *
 * Without a negotiated extension (the server offers none: per-message deflate is off) the frame
 * is written to the TCP socket as it is: header and prefix (made again only when the payload's
 * length changes) and the payload, copied into one buffer and written at once, nothing encoded
 * per subscriber. `ws` takes
 * one string or buffer per message: the prefix and payload joined and encoded to UTF-8 again
 * for each of thousands of sockets, which, with a promise per subscriber, cost livegate more
 * than the write itself. `ws` writes to the same TCP socket in the same way
 * (it never holds frames back without an extension), so messages stay in order with the
 * ones graphql-ws sends, and `socket.bufferedAmount` still counts what waits.
 */
export function nextWriter(socket: WebSocket, id: string, tcp: Duplex | undefined): NextWriter {
  const prefix = Buffer.from(`{"id":${JSON.stringify(id)},"type":"next","payload":`)
  if (socket.extensions !== '' || !tcp) {
    return {
      write: (payload, written) =>
        socket.send(Buffer.concat([prefix, payload]), { binary: false }, written && (() => written())),
      buffered: () => socket.bufferedAmount,
      // `ws` frames each message itself; it holds nothing back for a batch.
      release: () => {},
    }
  }
  let head: Buffer = prefix
  let headFor = -1
  let corked = false
  // Bytes of the batch being held: in the socket's count, but not waiting on the client.
  let held = 0
  return {
    write(payload, written, hold) {
      if (hold && !corked) {
        corked = true
        tcp.cork()
      }
      if (payload.length !== headFor) {
        head = headed(prefix, prefix.length + payload.length)
        headFor = payload.length
      }
      // One buffer, one write: a corked pair of writes costs Node's stream a writev's bookkeeping
      // per subscriber, more than copying the payload (a few hundred bytes) does. `set` rather than
      // Buffer's `copy`, whose checks and views cost more than the copy itself at this size.
      const frame = Buffer.allocUnsafe(head.length + payload.length)
      frame.set(head, 0)
      frame.set(payload, head.length)
      if (corked) held += frame.length
      if (written) tcp.write(frame, () => written())
      else tcp.write(frame)
    },
    release() {
      if (!corked) return
      corked = false
      held = 0
      tcp.uncork()
    },
    // Without an extension `ws` queues nothing of its own: what waits is the TCP socket's.
    buffered: () => tcp.writableLength - held,
  }
}
