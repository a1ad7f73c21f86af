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

/** The entries of a task's samples, in time order (samples in any order). */
export function foldSamples(samples: readonly TimelineSample[]): SampleEntry[] {
  const sorted = [...samples].sort((a, b) => a.at - b.at)
  const entries: SampleEntry[] = []
  let run: Run | undefined
  let runs = 0
  let peak: TimelineSample | undefined
  // One function for the whole fold, not one made per sample: a day holds some 17,000 samples.
  const start = (sample: TimelineSample) => {
    if (run) entries.push(runEntry(run, runs++))
    run = { first: sample, last: sample, count: 1, low: sample.viewers, high: sample.viewers }
  }
  for (const sample of sorted) {
    if (!peak || sample.viewers > peak.viewers) peak = sample
    if (!run || sample.at - run.last.at > LISTING_GAP_MS) {
      start(sample)
      continue
    }
    if (run.high >= DROP_FROM_VIEWERS && sample.viewers * 2 <= run.high) {
      entries.push({
        at: sample.at,
        key: keyAt('d', sample.at),
        kind: 'AUDIENCE',
        source: 'POLLED',
        summary: `audience dropped from ${run.high} to ${plural(sample.viewers, 'viewer')}`,
      })
      start(sample)
      continue
    }
    run.last = sample
    run.count += 1
    run.low = Math.min(run.low, sample.viewers)
    run.high = Math.max(run.high, sample.viewers)
  }
  if (run) entries.push(runEntry(run, runs))
  if (peak && peak.viewers > 0)
    entries.push({
      at: peak.at,
      key: keyAt('p', peak.at),
      kind: 'AUDIENCE',
      source: 'POLLED',
      summary: `audience peak: ${plural(peak.viewers, 'viewer')}`,
    })
  return entries.sort((a, b) => a.at - b.at)
}
