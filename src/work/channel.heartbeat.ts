import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import type { Database } from '../storage/database.client.js'
import { sendProbe } from '../storage/notify.statements.js'

/**
 * Whether the listening connection still hears the channels. postgres.js listens again by itself
 * after its connection drops, but only once: if the server is still away then, the channels are
 * never listened to again. A probe NOTIFY each tick that does not come back by the next one
 * means the listener went deaf: it listens anew. On PGlite the channels are in process and never lost.
 */
export class ChannelHeartbeat {
  listening = true
  private readonly probe = `{"probe":"${randomUUID()}"}`
  private sentAt = 0
  private answered = true
  private relistening = false
  private stopped = false

  constructor(
    private readonly database: Pick<Database, 'db' | 'driver'>,
    private readonly tickMs: number,
    private readonly relisten: () => Promise<void>,
    private readonly log: Pick<FastifyBaseLogger, 'warn' | 'info'>,
  ) {}

  isProbe(payload: string): boolean {
    if (payload !== this.probe) return false
    this.heard()
    return true
  }

  heard(): void {
    if (!this.listening) this.log.info('channels: heard again')
    this.answered = true
    this.listening = true
  }

  beat(): void {
    if (this.database.driver !== 'postgres' || this.stopped) return
    if (!this.answered && this.sentAt > 0 && Date.now() - this.sentAt >= this.tickMs) {
      if (this.listening) this.log.warn('channels: the listening connection went silent; listening again')
      this.listening = false
      void this.listenAgain()
    }
    if (!this.answered) return
    this.answered = false
    this.sentAt = Date.now()
    sendProbe(this.database.db, this.probe).catch(() => {
      // The server is away: nothing is heard until it is back, and the next beat tries again.
      this.answered = true
      this.listening = false
    })
  }

  stop(): void {
    this.stopped = true
  }

  private async listenAgain(): Promise<void> {
    if (this.relistening) return
    this.relistening = true
    try {
      await this.relisten()
      // Heard once the server says the channel is listened to again (onlisten), or a probe comes back.
      this.answered = true
    } catch {
      // Still away: the next beat tries again.
    } finally {
      this.relistening = false
    }
  }
}
