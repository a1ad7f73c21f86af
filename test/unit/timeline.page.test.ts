import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { compareEntries, foldTimeline, type TimelineFacts } from '../../src/fold/timeline/timeline.fold.js'
import { TimelinePager } from '../../src/fold/timeline/timeline.page.js'
import { LISTING_GAP_MS, peakOf, type TimelineSample } from '../../src/fold/timeline/timeline.samples.js'

const T0 = Date.parse('2026-11-28T12:00:00Z')

// Answers 5 s apart with now and then a gap past the listing gap, the audience wandering and dropping.
const samplesArb = fc
  .array(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 9 })), { maxLength: 300 })
  .map((steps) => {
    let at = T0
    return steps.map(([viewers, jump]): TimelineSample => {
      at += jump === 0 ? LISTING_GAP_MS + 5000 : jump === 1 ? 1 : 5000
      return { at, viewers }
    })
  })

// Other facts at or a few seconds around an answer's time, where a run starts or ends.
const nearArb = fc.array(fc.tuple(fc.nat(300), fc.integer({ min: -2, max: 2 })), { maxLength: 30 })
const factsArb = fc.record({ samples: samplesArb, callbacks: nearArb, deliveries: nearArb }).map((drawn) => {
  const near = ([index, step]: [number, number]) =>
    (drawn.samples[index % (drawn.samples.length || 1)]?.at ?? T0) + step * 2500
  return { samples: drawn.samples, callbacks: drawn.callbacks.map(near), deliveries: drawn.deliveries.map(near) }
})

function factsOf(drawn: { samples: TimelineSample[]; callbacks: number[]; deliveries: number[] }): TimelineFacts {
  return {
    serviceCode: 'CODE',
    task: null,
    callbacks: drawn.callbacks.map((offset, i) => ({
      id: i + 1,
      type: i % 2 === 0 ? 0 : 9,
      at: offset,
      status: null,
      fileName: null,
    })),
    samples: drawn.samples,
    events: [],
    incidents: [],
    actions: [],
    recordings: [],
    deliveries: drawn.deliveries.map((offset, i) => ({
      id: i + 1,
      endpoint: 'https://hook.example',
      eventType: 'task.started',
      status: 'DELIVERED',
      attempts: 1,
      lastStatusCode: 200,
      at: offset,
      finishedAt: offset + 10,
    })),
  }
}

/** A page as the resolver reads it: the answers a chunk at a time until the page settles (each chunk checks it). */
function pageOf(facts: TimelineFacts, ask: ConstructorParameters<typeof TimelinePager>[2], chunk: number) {
  const { samples, ...record } = facts
  const pager = new TimelinePager(record, peakOf(samples) ?? null, ask)
  const sorted = [...samples].sort((a, b) => a.at - b.at)
  let read = 0
  let page = pager.page()
  while (page === undefined && pager.needsSamples) {
    pager.push(sorted.slice(read, read + chunk))
    read += chunk
    if (read >= sorted.length) pager.finish()
    page = pager.page()
  }
  return { page: page ?? [], read: Math.min(read, sorted.length) }
}

describe('a page of a task timeline, its answers read in chunks', () => {
  it('is the whole line cut after the cursor, whatever the chunks, cursor, size and kinds', () => {
    fc.assert(
      fc.property(
        factsArb,
        fc.integer({ min: 1, max: 16 }),
        fc.integer({ min: 1, max: 60 }),
        fc.nat(400),
        fc.constantFrom(undefined, ['LISTED'], ['AUDIENCE', 'CALLBACK'], ['WEBHOOK']),
        (drawn, chunk, fetch, cursorAt, kindList) => {
          const facts = factsOf(drawn)
          const kinds = kindList ? new Set<string>(kindList) : undefined
          const line = foldTimeline(facts).filter((entry) => kinds === undefined || kinds.has(entry.kind))
          const place = line[cursorAt % (line.length + 1)]
          const after = place ? { at: place.at, key: place.key } : undefined
          const expected = line.filter((entry) => after === undefined || compareEntries(entry, after) > 0)
          expect(pageOf(facts, { after, fetch, kinds }, chunk).page).toEqual(expected.slice(0, fetch))
        },
      ),
      { numRuns: 400 },
    )
  })

  it('reads the answers of the first page of a long line only as far as the page reaches', () => {
    const samples = Array.from({ length: 17_000 }, (_, i) => ({ at: T0 + i * 5000, viewers: i % 360 === 180 ? 5 : 25 }))
    const facts = factsOf({ samples, callbacks: [], deliveries: [] })
    const { page, read } = pageOf(facts, { after: undefined, fetch: 11, kinds: undefined }, 1024)
    expect(page).toEqual(foldTimeline(facts).slice(0, 11))
    expect(read).toBeLessThan(samples.length / 2)
  })
})
