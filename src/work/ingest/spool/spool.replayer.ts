import type { FastifyBaseLogger } from 'fastify'
import type { CallbackStore } from '../callback.store.js'
import type { CallbackRecord } from '../../../model/callback.record.js'
import type { CallbackSpool, SealedSegment } from './callback.spool.js'

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
  private running: Promise<void> | undefined
  private stopped = false
  private backingOff = false
  private wake: (() => void) | undefined
  private readonly attempts = new Map<string, number>()

  constructor(private readonly options: ReplayerOptions) {
    options.spool.onAppend(() => this.nudge())
  }

  /** Starts replaying in the background. */
  start(): void {
    if (this.running) return
    this.stopped = false
    this.running = this.loop()
  }

  /** Replays now, unless waiting out a backoff (the database is away; appends must not hammer it). */
  nudge(): void {
    if (!this.backingOff) this.wake?.()
  }

  /** Stops after the entry being kept; what is left stays in the spool. */
  async stop(): Promise<void> {
    this.stopped = true
    this.wake?.()
    await this.running
    this.running = undefined
  }

  private async loop(): Promise<void> {
    const { spool, log } = this.options
    const base = this.options.retryBaseMs ?? 200
    const max = this.options.retryMaxMs ?? 5000
    let delay = base
    let failures = 0
    while (!this.stopped) {
      try {
        await this.drain()
        if (failures > 0) log.info({ failures }, 'spool replayed: the database is back')
        failures = 0
        delay = base
        if (!this.stopped && spool.depth() === 0) await this.sleep(this.options.idleMs ?? 30_000)
        if (!this.stopped && spool.depth() === 0) await spool.adoptOrphans()
      } catch (error) {
        failures += 1
        // The first failure says so; the rest of an outage stays quiet.
        if (failures === 1)
          log.warn({ err: error, depth: spool.depth() }, 'spool replay paused: the database cannot take callbacks')
        else log.debug({ err: error, depth: spool.depth(), failures }, 'spool replay still paused')
        this.backingOff = true
        await this.sleep(delay)
        this.backingOff = false
        delay = Math.min(delay * 2, max)
      }
    }
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

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.wake = undefined
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.wake = done
    })
  }
}
