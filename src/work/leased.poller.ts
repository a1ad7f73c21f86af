import type { FastifyBaseLogger } from 'fastify'
import { WakeScheduler } from './wake.scheduler.js'

/** What {@link LeasedPoller} needs: the codes, their lease, and one poll of a code. */
export interface LeasedPollerOptions {
  /** What is polled (`task_list`, `list_files`), as the log lines name it. */
  name: string
  serviceCodes: readonly string[]
  /** How long a lease lasts unless renewed; it is renewed every third of that. */
  leaseMs: number
  /** Takes a code's lease or keeps it; whether this instance holds it now. */
  acquire(serviceCode: string): Promise<boolean>
  /** Gives a held lease up, so another instance may take it at once. */
  release(serviceCode: string): Promise<void>
  /** One poll of a code, its outcome stored by the caller; resolves to the wait before the next. */
  poll(serviceCode: string): Promise<number>
  /** The wait before the first poll once this instance takes a code's lease; none by default. */
  resume?(serviceCode: string): Promise<number>
  /** Told whenever this instance takes or gives up a code's lease. */
  onHeld?(serviceCode: string, held: boolean): void
  log: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>
}

interface CodeState {
  held: boolean
  /** Polls the code, one poll at a time, each after the wait the one before asked for. */
  polls: WakeScheduler
}

/**
 * The lease loop every background poller of the cloud shares: across gateway instances on one
 * database, a lease per service code picks the one instance that polls it. Leases are renewed on
 * their own timer, so a slow or backed-off poll never loses one; a code is polled only while its
 * lease is held, one poll at a time, and the leases are given up on stop.
 */
export class LeasedPoller {
  private readonly codes = new Map<string, CodeState>()
  private readonly leases: WakeScheduler
  private stopping = false

  constructor(private readonly options: LeasedPollerOptions) {
    const renewEvery = options.leaseMs / 3
    this.leases = new WakeScheduler({
      run: async () => {
        await this.renewLeases()
        return { within: renewEvery }
      },
      onError: () => renewEvery,
    })
    for (const code of options.serviceCodes) {
      const state: CodeState = { held: false, polls: new WakeScheduler({ run: () => this.pollOnce(code, state) }) }
      this.codes.set(code, state)
    }
  }

  /** Whether the poller was stopped: a poll that ends after it stores nothing more. */
  get stopped(): boolean {
    return this.stopping
  }

  /** Whether this code is polled at all (by this instance or another). */
  covers(serviceCode: string): boolean {
    return this.codes.has(serviceCode)
  }

  /** Whether this instance holds the lease to poll a code. */
  holds(serviceCode: string): boolean {
    return this.codes.get(serviceCode)?.held ?? false
  }

  /** Starts taking leases; a code is polled as soon as its lease is held. */
  start(): void {
    this.leases.wake()
  }

  /**
   * Stops polling: `cancel` (which ends the requests under way) is called once no new poll can
   * begin; then the polls under way are awaited and the held leases given up.
   */
  async stop(cancel?: () => void): Promise<void> {
    this.stopping = true
    const stopped = [this.leases.stop(), ...[...this.codes.values()].map((state) => state.polls.stop())]
    cancel?.()
    await Promise.allSettled(stopped)
    const { log, name } = this.options
    for (const [code, state] of this.codes) {
      if (!state.held) continue
      state.held = false
      this.options.onHeld?.(code, false)
      await this.options.release(code).catch((error: unknown) => {
        log.warn({ err: error, serviceCode: code }, `${name} lease could not be released`)
      })
    }
  }

  private async renewLeases(): Promise<void> {
    const { log, name } = this.options
    for (const [code, state] of this.codes) {
      if (this.stopping) return
      let held = false
      try {
        held = await this.options.acquire(code)
      } catch (error) {
        // Nothing could be stored without the database anyway; polling resumes with the lease.
        log.warn({ err: error, serviceCode: code }, `${name} lease could not be renewed`)
      }
      if (held === state.held || this.stopping) continue
      state.held = held
      this.options.onHeld?.(code, held)
      if (!held) {
        state.polls.clear()
        log.info({ serviceCode: code }, `${name} of this code is polled by another instance now`)
        continue
      }
      // A lease taken back while its last poll is still under way: that poll schedules the next.
      if (state.polls.busy) continue
      const wait = await (this.options.resume?.(code) ?? Promise.resolve(0)).catch(() => 0)
      if (this.stopping || !state.held) continue
      state.polls.clear()
      state.polls.wakeIn(wait)
    }
  }

  private async pollOnce(code: string, state: CodeState): Promise<{ within: number } | undefined> {
    if (this.stopping || !state.held) return undefined
    const next = await this.options.poll(code).catch((error: unknown) => {
      // A poll stores its own outcome; one that throws anyway is tried again a lease later.
      this.options.log.error({ err: error, serviceCode: code }, `${this.options.name} poll failed`)
      return this.options.leaseMs
    })
    return this.stopping || !state.held ? undefined : { within: next }
  }
}
