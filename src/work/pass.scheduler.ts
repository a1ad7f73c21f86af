import { DOORBELL_CHANNEL } from '../model/notify.channels.js'
import type { ChannelListener } from './channel.listener.js'
import { retrying, WakeScheduler } from './wake.scheduler.js'

/**
 * What one pass over a log did: `busy` when another instance holds the pass's lock; else whether
 * a full batch was read (`more`: go on at once) and whether committed rows wait behind an older
 * transaction (`pending`: look again soon, not at the tick).
 */
export type PassOutcome = { kind: 'busy' } | { kind: 'done'; more: boolean; pending: boolean }

/** What a {@link PassScheduler} is built from. */
export interface PassSchedulerOptions {
  /**
   * The process's listener, through which the log's doorbell wakes a pass. Without one (a reader
   * built only to catch up, as tests and the bench do) passes run at the tick alone.
   */
  channels?: Pick<ChannelListener, 'on'> | undefined
  /** Runs one pass in its own transaction; a throw is retried a second later. */
  pass: () => Promise<PassOutcome>
  /** Between two looks at the log when nothing rang (a safety net: a doorbell may be missed). */
  tickMs: number
  /** Whether the log's doorbell wakes a pass now (a stand-by instance only looks at the tick). */
  answersDoorbell?: () => boolean
  /** Told of a pass that failed, before the retry is scheduled. */
  onError: (error: unknown) => void
}

// A pass that met committed rows behind an older transaction looks again this soon.
const PENDING_RETRY_MS = 25
const ERROR_RETRY_MS = 1000

/**
 * When the readers of the log run their passes (the projector, the webhook enqueuer): at the
 * log's doorbell, at every tick, at once again while a batch was full, never two at a time in one
 * process, and not after `stop` (a {@link WakeScheduler}). A doorbell that rings during a pass asks
 * for one more pass after it, so no commit waits for the tick.
 */
export class PassScheduler {
  private readonly scheduler: WakeScheduler
  private off: (() => void) | undefined

  constructor(private readonly options: PassSchedulerOptions) {
    this.scheduler = new WakeScheduler({
      run: async () => {
        const pass = await options.pass()
        // Another instance holds the lock: it answers the doorbell, this one looks at the tick.
        if (pass.kind === 'busy') return { within: options.tickMs, rest: true }
        return { again: pass.more, within: pass.pending ? PENDING_RETRY_MS : options.tickMs }
      },
      onError: (error) => {
        options.onError(error)
        return ERROR_RETRY_MS
      },
    })
  }

  /** Listens for the doorbell and runs a first pass. */
  async start(): Promise<void> {
    // The doorbell rung by `ringDoorbell` (storage/callback.statements.ts), on a channel of its own.
    // The channel heard again after a lost connection: a doorbell may have been missed.
    this.off = this.options.channels?.on(
      DOORBELL_CHANNEL,
      () => {
        if (this.options.answersDoorbell?.() ?? true) this.wake()
      },
      () => this.wake(),
    )
    this.scheduler.wakeIn(0)
  }

  /** Stops listening and waits for a pass under way. */
  async stop(): Promise<void> {
    const stopped = this.scheduler.stop()
    this.off?.()
    await stopped
  }

  /** Runs passes until the log holds nothing final behind the checkpoint: what tests and the bench wait on. */
  async catchUp(): Promise<void> {
    await retrying(
      async () => {
        await this.scheduler.settled()
        return this.options.pass()
      },
      (pass) => {
        if (pass.kind === 'done' && !pass.more && !pass.pending) return undefined
        return pass.kind === 'busy' || pass.pending ? 20 : 0
      },
    )
  }

  /** Asks for a pass: now if none runs, else once the running one ends. */
  wake(): void {
    this.scheduler.wake()
  }
}
