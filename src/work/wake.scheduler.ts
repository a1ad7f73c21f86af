/**
 * What one run tells its scheduler: `again` to run once more at once (it left work behind, a full
 * batch), `within` to look again at the latest that many milliseconds from now (a tick, a retry).
 */
export interface RunVerdict {
  again?: boolean | undefined
  within?: number | undefined
  /** Nothing more now, even for a wake that came during the run (someone else holds the work). */
  rest?: boolean | undefined
}

/** What a {@link WakeScheduler} runs. */
export interface WakeOptions {
  /** One run. A throw ends the loop; `onError` says when to look again. */
  run: () => Promise<RunVerdict | undefined> | RunVerdict | undefined
  /** Told of a run that threw; answers within how many milliseconds to look again (none: only a wake). */
  onError?: ((error: unknown) => number | undefined) | undefined
}

/**
 * The one way livegate's units of work wake and run again (the readers of the log, a webhook
 * endpoint's worker, the hub's look behind a running transaction and its tick): a run at a wake,
 * never two at a time, once more after one under way when a wake came during it, again at once
 * while a run says so, and within a delay a run or anyone asks for (the earliest asked wins). A
 * timer never keeps the process alive, and nothing runs after {@link stop}.
 */
export class WakeScheduler {
  private running: Promise<void> | undefined
  private again = false
  private stopped = false
  private timer: NodeJS.Timeout | undefined
  /** When the timer fires, by this process's clock. */
  private timerAt = Infinity

  constructor(private readonly options: WakeOptions) {}

  /** Runs now if no run is under way; else once more after it. */
  wake(): void {
    if (this.stopped) return
    if (this.running) {
      this.again = true
      return
    }
    this.running = this.loop().finally(() => {
      this.running = undefined
    })
  }

  /** Makes sure a run starts within `ms`: a timer already due sooner is kept. */
  wakeIn(ms: number): void {
    if (this.stopped) return
    const at = Date.now() + ms
    if (this.timer && this.timerAt <= at) return
    if (this.timer) clearTimeout(this.timer)
    this.timerAt = at
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.timerAt = Infinity
      this.wake()
    }, ms)
    this.timer.unref()
  }

  /** Resolves once no run is under way (at once if none is). */
  async settled(): Promise<void> {
    while (this.running) await this.running
  }

  /** Allows runs again after {@link stop}. */
  restart(): void {
    this.stopped = false
  }

  /** No more runs or timers; resolves once the run under way has ended. */
  async stop(): Promise<void> {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
    this.timerAt = Infinity
    await this.running
  }

  private async loop(): Promise<void> {
    try {
      for (;;) {
        this.again = false
        const verdict = await this.options.run()
        if (verdict?.within !== undefined) this.wakeIn(verdict.within)
        if (this.stopped || verdict?.rest || !(verdict?.again || this.again)) return
      }
    } catch (error) {
      const within = this.options.onError?.(error)
      if (within !== undefined) this.wakeIn(within)
    }
  }
}
