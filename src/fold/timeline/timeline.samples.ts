/**
 * The task list's answers on a task's line, pure: a run of answers that say nothing new is one
 * entry ("listed, 42 answers, 12:00:05–12:03:35"), so a task of a day stays a page of readable
 * entries. A run ends where an answer says something: the task was not listed for a while, or its
 * audience dropped; the audience's peak is an entry of its own.
 */

/** One sampled answer naming the task: when, and how many watched. */
export interface TimelineSample {
  at: number
  viewers: number
}

/** An entry the samples make (the line adds no subject: a sample is no node). */
export interface SampleEntry {
  at: number
  key: string
  kind: 'LISTED' | 'AUDIENCE'
  source: 'POLLED'
  summary: string
}

/** Longer than this between two answers naming the task: it was not listed in between. */
export const LISTING_GAP_MS = 60_000

/** An audience that falls to half its run's high or less, from at least this many, is a drop. */
export const DROP_FROM_VIEWERS = 4

const clock = (at: number) => new Date(at).toISOString().slice(11, 19)
const keyAt = (letter: string, at: number) => `${letter}${String(at).padStart(16, '0')}`
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

interface Run {
  first: TimelineSample
  last: TimelineSample
  count: number
  low: number
  high: number
}

function runEntry(run: Run, index: number): SampleEntry {
  const span = run.count === 1 ? clock(run.first.at) : `${clock(run.first.at)}–${clock(run.last.at)}`
  const viewers = run.low === run.high ? plural(run.low, 'viewer') : `${run.low}–${run.high} viewers`
  return {
    at: run.first.at,
    key: keyAt('l', run.first.at),
    kind: 'LISTED',
    source: 'POLLED',
    summary: `${index === 0 ? 'first listed' : 'listed'}, ${plural(run.count, 'answer')}, ${span}, ${viewers} (UTC)`,
  }
}

/**
 * The run-and-drop fold of the samples, fed in time order a chunk at a time, so that a page of the
 * line reads the samples only as far as the page reaches. Every entry before `openSince` is out;
 * the run still open begins there, and the samples still to come make entries at or after it.
 */
export class SampleFold {
  readonly entries: SampleEntry[] = []
  private run: Run | undefined
  private runs = 0

  /** Where the open run began: nothing the fold makes later comes before it. */
  get openSince(): number | undefined {
    return this.run?.first.at
  }

  /** The next sample, in time order. */
  push(sample: TimelineSample): void {
    const run = this.run
    if (!run || sample.at - run.last.at > LISTING_GAP_MS) return this.start(sample)
    if (run.high >= DROP_FROM_VIEWERS && sample.viewers * 2 <= run.high) {
      this.entries.push({
        at: sample.at,
        key: keyAt('d', sample.at),
        kind: 'AUDIENCE',
        source: 'POLLED',
        summary: `audience dropped from ${run.high} to ${plural(sample.viewers, 'viewer')}`,
      })
      return this.start(sample)
    }
    run.last = sample
    run.count += 1
    run.low = Math.min(run.low, sample.viewers)
    run.high = Math.max(run.high, sample.viewers)
  }

  /** No samples are left: the open run ends with the last. */
  finish(): void {
    if (this.run) this.entries.push(runEntry(this.run, this.runs++))
    this.run = undefined
  }

  private start(sample: TimelineSample): void {
    if (this.run) this.entries.push(runEntry(this.run, this.runs++))
    this.run = { first: sample, last: sample, count: 1, low: sample.viewers, high: sample.viewers }
  }
}

/** The first sample with the most viewers, of samples in any order. */
export function peakOf(samples: readonly TimelineSample[]): TimelineSample | undefined {
  let peak: TimelineSample | undefined
  for (const sample of samples)
    if (!peak || sample.viewers > peak.viewers || (sample.viewers === peak.viewers && sample.at < peak.at))
      peak = sample
  return peak
}

/** The audience's peak as an entry: none when nobody ever watched. */
export function peakEntry(peak: TimelineSample | undefined | null): SampleEntry[] {
  if (!peak || peak.viewers <= 0) return []
  return [
    {
      at: peak.at,
      key: keyAt('p', peak.at),
      kind: 'AUDIENCE',
      source: 'POLLED',
      summary: `audience peak: ${plural(peak.viewers, 'viewer')}`,
    },
  ]
}

/** The entries of a task's samples, in time order (samples in any order). */
export function foldSamples(samples: readonly TimelineSample[]): SampleEntry[] {
  const fold = new SampleFold()
  for (const sample of [...samples].sort((a, b) => a.at - b.at)) fold.push(sample)
  fold.finish()
  return [...fold.entries, ...peakEntry(peakOf(samples))].sort((a, b) => a.at - b.at)
}
