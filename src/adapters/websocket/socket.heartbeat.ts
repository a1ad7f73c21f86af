import type WebSocket from 'ws'
import { WakeScheduler } from '../../work/wake.scheduler.js'

/**
 * How many parts the sockets are pinged in, one part per tick: ten thousand sockets are pinged a
 * twelfth at a time, a few milliseconds of the event loop each second, not in one long burst.
 */
const SLICES = 12

/**
 * The websocket server's keep-alive: every socket is pinged once per `intervalMs`, and one that has
 * not answered its last ping by the next is terminated (a client gone without a close, a dead
 * connection a proxy still holds open). That is what graphql-ws's own keep-alive does, which it
 * does with an interval timer per socket and a timer and a listener per ping: at ten thousand
 * sockets, about a thousand timers made and cleared a second. Here it is one loop on the scheduler
 * for all sockets, and one `pong` listener per socket for its life.
 *
 * Sockets are dealt into {@link SLICES} parts as they open; each tick pings one part, so each socket
 * is pinged once every `intervalMs`, the first time between `intervalMs / SLICES` and `intervalMs`
 * after it opened.
 */
export class SocketHeartbeat {
  // Each part: its sockets, and whether each answered since its last ping.
  private readonly slices: Array<Map<WebSocket, boolean>> = Array.from({ length: SLICES }, () => new Map())
  private dealt = 0
  private turn = 0
  private readonly scheduler: WakeScheduler

  /** `intervalMs`: between two pings of a socket; 0 pings none. */
  constructor(private readonly intervalMs: number) {
    this.scheduler = new WakeScheduler({
      run: () => {
        this.beat()
        return { within: this.tickMs }
      },
    })
  }

  private get tickMs(): number {
    return Math.max(1, Math.round(this.intervalMs / SLICES))
  }

  /** Starts pinging; sockets may be added before. */
  start(): void {
    if (this.intervalMs > 0) this.scheduler.wakeIn(this.tickMs)
  }

  /** Stops pinging (sockets are closed by their server). */
  async stop(): Promise<void> {
    await this.scheduler.stop()
  }

  /** Keeps `socket` alive from now until it closes. */
  add(socket: WebSocket): void {
    if (this.intervalMs <= 0) return
    const slice = this.slices[this.dealt++ % SLICES] as Map<WebSocket, boolean>
    slice.set(socket, true)
    socket.on('pong', () => {
      if (slice.has(socket)) slice.set(socket, true)
    })
    socket.once('close', () => slice.delete(socket))
  }

  private beat(): void {
    const slice = this.slices[this.turn++ % SLICES] as Map<WebSocket, boolean>
    for (const [socket, answered] of slice) {
      if (socket.readyState !== socket.OPEN) continue
      if (!answered) {
        slice.delete(socket)
        socket.terminate()
        continue
      }
      slice.set(socket, false)
      socket.ping()
    }
  }
}
