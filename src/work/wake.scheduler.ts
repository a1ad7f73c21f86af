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

/** How a unit waits again after runs that failed: see {@link backoffMs}. */
export interface Backoff {
  baseMs: number
  maxMs: number
  /** In [0, 1); `Math.random` by default (tests pass a fixed one). */
  random?: (() => number) | undefined
}

/** What a {@link WakeScheduler} runs. */
export interface WakeOptions {
  /** One run. A throw ends the loop; `onError` or `backoff` says when to look again. */
  run: () => Promise<RunVerdict | undefined> | RunVerdict | undefined
  /**
   * Told of a run that threw, and how many have in a row; answers within how many milliseconds to
   * look again. Undefined: the `backoff`'s wait if there is one, else only a wake.
   */
  onError?: ((error: unknown, failures: number) => number | undefined | void) | undefined
  /** The wait after a failed run, growing while runs keep failing ({@link backoffMs}). */
  backoff?: Backoff | undefined
}

/** A unit of work of a process: started in its order, stopped in the reverse (see `startUnits`). */
export interface Unit {
  /** What the unit is, as a failed start names it. */
  name: string
  start?: (() => Promise<void> | void) | undefined
  stop?: (() => Promise<void> | void) | undefined
}

/**
 * The one backoff of livegate's units of work: the wait after `doublings` doublings of `baseMs`,
 * capped at `maxMs` (never below `baseMs`). The jitter keeps at least half of each step, so waits
 * still grow from one failure to the next while instances that failed together drift apart.
 */
export function backoffMs(
  doublings: number,
  baseMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const step = Math.min(Math.max(maxMs, baseMs), baseMs * 2 ** Math.min(Math.max(doublings, 0), 30))
  return Math.round(step / 2 + (random() * step) / 2)
}

/**
 * The one way livegate's units of work wake and run again (the readers of the log, a webhook
 * endpoint's worker and its outcomes, the hub's look behind a running transaction and its tick, the
 * pollers' leases and polls, the spool's replay, group commit, the log's doorbell): a run at a wake,
 * never two at a time, once more after one under way when a wake came during it, again at once
 * while a run says so, and within a delay a run or anyone asks for (the earliest asked wins). A
 * timer never keeps the process alive, and nothing runs after {@link stop}. A run that throws
 * waits as `onError` says, or by the `backoff` while runs keep failing.
 */
export class WakeScheduler {
  private running: Promise<void> | undefined
  /** Set from a wake until the loop decides to end, in the same turn: a wake after it starts a new loop. */
  private looping = false
  private again = false
  private stopped = false
  private timer: NodeJS.Timeout | undefined
  /** When the timer fires, by this process's clock. */
  private timerAt = Infinity
  private soon = false
  /** Runs that threw in a row; 0 once one ends without. */
  private failed = 0

  constructor(private readonly options: WakeOptions) {}

  /** Runs now if no run is under way; else once more after it. */
  wake(): void {
    if (this.stopped) return
    if (this.looping) {
      this.again = true
      return
    }
    this.looping = true
    const running = this.loop()
    // A run that threw before its first await has already ended.
    if (this.looping) this.running = running
  }

  /**
   * Runs once the I/O of this turn of the event loop is done (a `setImmediate`): what is asked
   * for in the same turn goes with the same run.
   */
  wakeSoon(): void {
    if (this.stopped || this.soon) return
    this.soon = true
    setImmediate(() => {
      this.soon = false
      this.wake()
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

  /** Drops a timer asked for (the unit's work went elsewhere); a wake still runs. */
  clear(): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
    this.timerAt = Infinity
  }

  /** Whether a run is under way. */
  get busy(): boolean {
    return this.looping
  }

  /** How many runs in a row have thrown (0 after one that did not). */
  get failures(): number {
    return this.failed
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
    this.clear()
    await this.running
  }

  private async loop(): Promise<void> {
    try {
      for (;;) {
        this.again = false
        const verdict = await this.options.run()
        this.failed = 0
        if (verdict?.within !== undefined) this.wakeIn(verdict.within)
        if (this.stopped || verdict?.rest || !(verdict?.again || this.again)) return
      }
    } catch (error) {
      this.failed += 1
      const { backoff, onError } = this.options
      const asked = onError?.(error, this.failed)
      const within = asked ?? (backoff && backoffMs(this.failed - 1, backoff.baseMs, backoff.maxMs, backoff.random))
      if (within !== undefined) this.wakeIn(within)
    } finally {
      // Here rather than in a `finally` on the loop's promise: a wake between the two would be lost.
      this.looping = false
      this.running = undefined
    }
  }
}

/**
 * Starts the units in their order, each once the one before it has started (a unit may rely on
 * those before it). A start that fails rejects, and no later unit starts: the caller stops them
 * all ({@link stopUnits}), as it does a gateway whose start failed after they were built.
 */
export async function startUnits(units: readonly Unit[]): Promise<void> {
  for (const unit of units) await unit.start?.()
}

/**
 * Stops the units in the reverse order of their start: a unit stops after those that rely on it.
 * One that fails to stop does not keep the rest running: they all stop, then the first error is thrown.
 */
export async function stopUnits(units: readonly Unit[]): Promise<void> {
  let failed: { error: unknown } | undefined
  for (const unit of [...units].reverse()) {
    try {
      await unit.stop?.()
    } catch (error) {
      failed ??= { error }
    }
  }
  if (failed) throw failed.error
}

/** A wait of `ms` (`setTimeout`, or `sleep` when a test gives one) that an abort of `signal` ends at once. */
export async function pause(ms: number, signal?: AbortSignal, sleep?: (ms: number) => Promise<void>): Promise<void> {
  if (signal?.aborted) return
  let onAbort: (() => void) | undefined
  let timer: NodeJS.Timeout | undefined
  const aborted = new Promise<void>((resolve) => {
    onAbort = resolve
    signal?.addEventListener('abort', onAbort, { once: true })
  })
  const slept = sleep ? sleep(ms) : new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))
  try {
    await Promise.race([slept, aborted])
  } finally {
    clearTimeout(timer)
    if (onAbort) signal?.removeEventListener('abort', onAbort)
  }
}

/**
 * The one retry loop of a call (a request to the cloud): runs `attempt` (0 first) and, while
 * `again` answers a wait for what it gave, {@link pause}s that long and runs it again.
 */
export async function retrying<T>(
  attempt: (attempt: number) => Promise<T>,
  again: (outcome: T, attempt: number) => number | undefined,
  wait: { signal?: AbortSignal | undefined; sleep?: ((ms: number) => Promise<void>) | undefined } = {},
): Promise<T> {
  for (let count = 0; ; count++) {
    const outcome = await attempt(count)
    const ms = again(outcome, count)
    if (ms === undefined) return outcome
    await pause(ms, wait.signal, wait.sleep)
  }
}
