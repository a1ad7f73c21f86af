import type { FastifyBaseLogger } from 'fastify'
import type { CallbackStore } from '../callback.store.js'
import type { CallbackRecord } from '../../../model/callback.record.js'
import type { CallbackSpool, SealedSegment } from './callback.spool.js'
import { WakeScheduler } from '../../wake.scheduler.js'

/** What the replayer is built from; the timings are injectable so tests need not wait. */
export interface ReplayerOptions {
  spool: CallbackSpool
  store: Pick<CallbackStore, 'keep' | 'ping'>
  log: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error' | 'debug'>
  /** First wait after a failed pass; doubled after each further failure. */
  retryBaseMs?: number
  retryMaxMs?: number
  /** How often an idle replayer looks for segments a gone spool left behind. */
  idleMs?: number
  /** Tries of one entry, while the database answers other statements, before it is set aside. */
  attemptsPerEntry?: number
}

/**
 * Replays the spool into the database, oldest entry first, whenever it holds something: at start
 * (a previous run's spool), after each append, and again with backoff while the database is away.
 * A segment is removed only after every entry in it is kept; replaying one again after a crash is
 * harmless because keeping is idempotent.
 */
export class SpoolReplayer {
  // Until start: an append before it replays nothing (start replays all).
  private stopped = true
  /** Whether the last run drained the spool: the next one, after an idle wait or a nudge, may adopt. */
  private rested = false
  private readonly attempts = new Map<string, number>()
  private readonly replays: WakeScheduler

  constructor(private readonly options: ReplayerOptions) {
    const { spool, log } = options
    this.replays = new WakeScheduler({
      run: async () => {
        // After an idle wait, an empty spool looks for segments a gone spool left behind.
        const rested = this.rested
        this.rested = false
        if (rested && !this.stopped && spool.depth() === 0) await spool.adoptOrphans()
        await this.drain()
        const failures = this.replays.failures
        if (failures > 0) log.info({ failures }, 'spool replayed: the database is back')
        this.rested = true
        return { within: options.idleMs ?? 30_000 }
      },
      onError: (error, failures) => {
        // The first failure says so; the rest of an outage stays quiet.
        if (failures === 1)
          log.warn({ err: error, depth: spool.depth() }, 'spool replay paused: the database cannot take callbacks')
        else log.debug({ err: error, depth: spool.depth(), failures }, 'spool replay still paused')
      },
      backoff: { baseMs: options.retryBaseMs ?? 200, maxMs: options.retryMaxMs ?? 5000 },
    })
    spool.onAppend(() => this.nudge())
  }

  /** Starts replaying in the background. */
  start(): void {
    this.stopped = false
    this.replays.restart()
    this.replays.wake()
  }

  /** Replays now, unless waiting out a backoff (the database is away; appends must not hammer it). */
  nudge(): void {
    if (!this.stopped && this.replays.failures === 0) this.replays.wake()
  }

  /** Stops after the entry being kept; what is left stays in the spool. */
  async stop(): Promise<void> {
    this.stopped = true
    await this.replays.stop()
  }

  private async drain(): Promise<void> {
    const { spool } = this.options
    while (!this.stopped) {
      const segment = spool.segments()[0]
      if (!segment) {
        if (spool.depth() === 0) return
        await spool.seal()
        if (spool.segments().length === 0) return
        continue
      }
      const rows = await spool.read(segment)
      for (let index = segment.replayed; index < rows.length; index += 1) {
        if (this.stopped) return
        await this.keepOne(segment, rows[index] as CallbackRecord)
      }
      await spool.remove(segment)
    }
  }

  private async keepOne(segment: SealedSegment, row: CallbackRecord): Promise<void> {
    const { spool, store, log } = this.options
    try {
      await store.keep(row, { replay: true })
      this.attempts.delete(row.dedupeKey)
      spool.kept(segment)
      return
    } catch (error) {
      // Only a database that answers other statements can be blamed on the entry itself.
      await store.ping()
      const attempts = (this.attempts.get(row.dedupeKey) ?? 0) + 1
      if (attempts < (this.options.attemptsPerEntry ?? 3)) {
        this.attempts.set(row.dedupeKey, attempts)
        throw error
      }
      this.attempts.delete(row.dedupeKey)
      log.error(
        { err: error, dedupeKey: row.dedupeKey, dir: spool.dir },
        'a spooled callback cannot be kept; set aside in the spool directory',
      )
      await spool.setAsideEntry(segment, row, error instanceof Error ? error.message : String(error))
    }
  }
}
