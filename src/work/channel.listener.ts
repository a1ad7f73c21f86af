import type { FastifyBaseLogger } from 'fastify'
import { CHANNELS, type Channel, HEARTBEAT_CHANNEL } from '../model/notify.channels.js'
import type { Database } from '../storage/database.client.js'
import { ChannelHeartbeat } from './channel.heartbeat.js'
import { WakeScheduler } from './wake.scheduler.js'

/** What {@link ChannelListener} is built from. */
export interface ChannelListenerOptions {
  database: Pick<Database, 'db' | 'driver' | 'listen'>
  log: Pick<FastifyBaseLogger, 'warn' | 'info' | 'error'>
  /** How often the listener checks that it still hears (a probe on the heartbeat channel). */
  tickMs?: number
}

/** One in-process subscriber of a channel. */
interface Subscriber {
  onPayload: (payload: string) => void
  onHeardAgain: (() => void) | undefined
}

const TICK_MS = 1000
// Far above a LISTEN's answer from a server that is up, even a busy one.
const LISTEN_LIMIT_MS = 15_000

/**
 * The one listener of a process on every channel ({@link CHANNELS}): it holds the LISTENs, hands
 * each payload to the parts of this process that asked for its channel, and listens anew when
 * its connection went deaf (the heartbeat). A doorbell rung while it was deaf is lost; each
 * subscriber is told when its channel is heard again, so it reads on from where it stands.
 * Started by the assembly before the parts that subscribe and stopped after them, so a part that
 * subscribes at its start hears everything from then on.
 */
export class ChannelListener {
  private readonly subscribers = new Map<Channel, Set<Subscriber>>(CHANNELS.map((channel) => [channel, new Set()]))
  private unlisten: Array<() => Promise<void>> = []
  private readonly heartbeat: ChannelHeartbeat
  private readonly ticker: WakeScheduler
  private readonly tickMs: number

  constructor(private readonly options: ChannelListenerOptions) {
    this.tickMs = options.tickMs ?? TICK_MS
    this.heartbeat = new ChannelHeartbeat(options.database, this.tickMs, () => this.listenAll(true), options.log)
    this.ticker = new WakeScheduler({
      run: () => {
        this.heartbeat.beat()
        return { within: this.tickMs }
      },
    })
  }

  /** Listens on every channel; resolves once the database listens. */
  async start(): Promise<void> {
    this.ticker.restart()
    await this.listenAll(false)
    // PGlite's channels are in process and never lost: nothing to check.
    if (this.options.database.driver === 'postgres') this.ticker.wakeIn(this.tickMs)
  }

  /** Stops listening; subscribers hear nothing more. */
  async stop(): Promise<void> {
    await this.ticker.stop()
    this.heartbeat.stop()
    for (const unlisten of this.unlisten.splice(0)) await unlisten().catch(() => {})
  }

  /** Whether the channels are heard (`/readyz`): false while the listening connection is lost. */
  get listening(): boolean {
    return this.heartbeat.listening
  }

  /**
   * Hands every payload on `channel` from now on to `onPayload`, and calls `onHeardAgain` each
   * time the channel is listened to again after the connection was lost. Answers how to stop.
   */
  on(channel: Channel, onPayload: (payload: string) => void, onHeardAgain?: () => void): () => void {
    const subscriber: Subscriber = { onPayload, onHeardAgain }
    const subscribers = this.subscribers.get(channel) as Set<Subscriber>
    subscribers.add(subscriber)
    return () => void subscribers.delete(subscriber)
  }

  private async listenAll(again: boolean): Promise<void> {
    for (const unlisten of this.unlisten.splice(0)) await unlisten().catch(() => {})
    try {
      for (const channel of CHANNELS) this.unlisten.push(await this.listenOne(channel))
    } catch (error) {
      // Half listened is deaf to the rest: undone, so the next try (a new start, or the heartbeat's) begins clean.
      for (const unlisten of this.unlisten.splice(0)) await unlisten().catch(() => {})
      throw error
    }
    if (again) for (const channel of CHANNELS) this.heardAgain(channel)
  }

  /**
   * LISTENs on one channel, within {@link LISTEN_LIMIT_MS}. While the server is going away,
   * postgres.js may leave a LISTEN neither answered nor refused for a minute or more: a start
   * would hang unseen, and the heartbeat's next relisten never come. A LISTEN given up on is
   * undone once it is answered, and its refusal, come late, is nobody's unhandled rejection.
   */
  private listenOne(channel: Channel): Promise<() => Promise<void>> {
    const listening = this.options.database.listen(
      channel,
      (payload) => this.dispatch(channel, payload),
      () => this.heardAgain(channel),
    )
    return new Promise((resolve, reject) => {
      let givenUp = false
      const timer = setTimeout(() => {
        givenUp = true
        reject(new Error(`channels: LISTEN ${channel} was not answered within ${LISTEN_LIMIT_MS} ms`))
      }, LISTEN_LIMIT_MS)
      timer.unref()
      listening.then(
        (unlisten) => {
          clearTimeout(timer)
          if (givenUp) void unlisten().catch(() => {})
          else resolve(unlisten)
        },
        (error: unknown) => {
          clearTimeout(timer)
          if (!givenUp) reject(error)
        },
      )
    })
  }

  // The heartbeat channel is the listener's own: its probes (sent by `ChannelHeartbeat`) end here.
  private dispatch(channel: Channel, payload: string): void {
    if (channel === HEARTBEAT_CHANNEL) return void this.heartbeat.isProbe(payload)
    this.each(channel, (subscriber) => subscriber.onPayload(payload))
  }

  private heardAgain(channel: Channel): void {
    if (channel === HEARTBEAT_CHANNEL) this.heartbeat.heard()
    this.each(channel, (subscriber) => subscriber.onHeardAgain?.())
  }

  // One subscriber's throw must not keep the payload from the others.
  private each(channel: Channel, call: (subscriber: Subscriber) => void): void {
    for (const subscriber of this.subscribers.get(channel) ?? []) {
      try {
        call(subscriber)
      } catch (error) {
        this.options.log.error({ err: error, channel }, 'channels: a subscriber failed on a payload')
      }
    }
  }
}
