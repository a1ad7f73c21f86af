import { compareEntries, factEntries, type TimelineEntry, type TimelineRecord } from './timeline.fold.js'
import { peakEntry, SampleFold, type TimelineSample } from './timeline.samples.js'

/**
 * One page of a task's line, pure, fed the task list's answers in time order a chunk at a time:
 * it says when the answers read so far settle the page, so a page near the line's start reads the
 * answers only as far as the page reaches, not a day of them. The facts other than answers are
 * few and read whole; the audience's peak is read by its index, so it is known before the fold
 * reaches it. The page is the same as the whole line's `foldTimeline` cut after `after`.
 */

/** An entry's place on the line: its time and key (a cursor holds one). */
export interface LinePlace {
  at: number
  key: string
}

/** What a page asks: after which place, how many entries at most, of which kinds (all when none). */
export interface PageAsk {
  after: LinePlace | undefined
  fetch: number
  kinds: ReadonlySet<string> | undefined
}

const SAMPLE_KINDS = ['LISTED', 'AUDIENCE']

export class TimelinePager {
  private readonly fold = new SampleFold()
  private readonly facts: TimelineEntry[]
  private done = false

  /** The task's facts but its answers, and the first answer with the most viewers (none without answers). */
  constructor(
    record: TimelineRecord,
    peak: TimelineSample | null,
    private readonly ask: PageAsk,
  ) {
    const peakEntries = peakEntry(peak).map((entry) => ({ ...entry, subject: null }))
    this.facts = [...factEntries(record), ...peakEntries].filter((entry) => this.shows(entry))
  }

  /** Whether the page can hold an entry the answers make: if not, none need be read. */
  get needsSamples(): boolean {
    return !this.done && (this.ask.kinds === undefined || SAMPLE_KINDS.some((kind) => this.ask.kinds?.has(kind)))
  }

  /** The next answers, in time order, after those pushed before. */
  push(samples: readonly TimelineSample[]): void {
    for (const sample of samples) this.fold.push(sample)
  }

  /** No answers are left: the last run ends with the last. */
  finish(): void {
    this.fold.finish()
    this.done = true
  }

  /**
   * The page once the answers read so far settle it, else undefined. Every entry the answers still
   * to come make lies at or after the open run's start, so the entries before it are final: when
   * `fetch` of them follow `after`, they are the page.
   */
  page(): TimelineEntry[] | undefined {
    const horizon = this.done || !this.needsSamples ? Number.POSITIVE_INFINITY : this.fold.openSince
    if (horizon === undefined) return undefined
    const folded = this.fold.entries.filter((entry) => this.shows(entry)).map((entry) => ({ ...entry, subject: null }))
    const settled = [...this.facts, ...folded]
      .filter((entry) => entry.at < horizon)
      .sort(compareEntries)
      .slice(0, this.ask.fetch)
    return settled.length >= this.ask.fetch || horizon === Number.POSITIVE_INFINITY ? settled : undefined
  }

  private shows(entry: Pick<TimelineEntry, 'at' | 'key' | 'kind'>): boolean {
    const { after, kinds } = this.ask
    return (kinds === undefined || kinds.has(entry.kind)) && (after === undefined || compareEntries(entry, after) > 0)
  }
}
