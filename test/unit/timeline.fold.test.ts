import { describe, expect, it } from 'vitest'
import { foldTimeline, type TimelineFacts } from '../../src/fold/timeline/timeline.fold.js'
import { foldSamples, LISTING_GAP_MS } from '../../src/fold/timeline/timeline.samples.js'
import { applyTaskCallback, emptyTaskState } from '../../src/fold/task.fold.js'
import { parseCallback } from '../../src/model/callback.parse.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'

const T0 = Date.parse('2026-11-28T12:00:00Z')
const s = (seconds: number) => T0 + seconds * 1000

const empty = (): TimelineFacts => ({
  serviceCode: 'CODE',
  task: null,
  callbacks: [],
  samples: [],
  events: [],
  incidents: [],
  actions: [],
  recordings: [],
  deliveries: [],
})

describe('a task timeline, folded from its facts', () => {
  it('folds answers that say nothing new into one entry, and breaks at a gap and at a drop', () => {
    const samples = [
      ...Array.from({ length: 42 }, (_, i) => ({ at: s(5 + i * 5), viewers: 10 + (i % 3) })),
      // not listed for longer than the gap, then listed again
      { at: s(5 + 41 * 5) + LISTING_GAP_MS + 1000, viewers: 12 },
      { at: s(5 + 41 * 5) + LISTING_GAP_MS + 6000, viewers: 3 },
    ]
    const entries = foldSamples(samples)
    expect(entries.map((entry) => [entry.kind, entry.summary])).toEqual([
      ['LISTED', 'first listed, 42 answers, 12:00:05–12:03:30, 10–12 viewers (UTC)'],
      ['AUDIENCE', 'audience peak: 12 viewers'],
      ['LISTED', 'listed, 1 answer, 12:04:31, 12 viewers (UTC)'],
      ['AUDIENCE', 'audience dropped from 12 to 3 viewers'],
      ['LISTED', 'listed, 1 answer, 12:04:36, 3 viewers (UTC)'],
    ])
    expect(entries.every((entry) => entry.source === 'POLLED')).toBe(true)
  })

  it('marks each fact with its source, oldest first, and an end the cloud never sent as INFERRED', () => {
    const facts = empty()
    facts.callbacks.push(
      { id: 1, type: 0, at: s(1), status: null, fileName: null },
      { id: 2, type: 15, at: s(20), status: 0, fileName: null },
      { id: 3, type: 15, at: s(25), status: 1, fileName: null },
      { id: 4, type: 2, at: s(90), status: null, fileName: 'a.mp4' },
    )
    facts.samples.push({ at: s(3), viewers: 1 }, { at: s(8), viewers: 1 })
    facts.events.push(
      { id: 1, type: 'task.started', at: s(2), facts: {} },
      { id: 2, type: 'task.health_changed', at: s(10), facts: { from: 'HEALTHY', to: 'STARVING', reason: 'r' } },
      { id: 3, type: 'task.callback_missing', at: s(80), facts: { kind: 'LIVE_END', reason: 'gone' } },
      { id: 4, type: 'task.ended', at: s(70), facts: { endReason: 'VANISHED' } },
      { id: 5, type: 'incident.opened', at: s(11), facts: {} },
    )
    facts.incidents.push({
      id: 7,
      rule: 'starving',
      severity: 'WARNING',
      summary: 'input stalled',
      openedAt: s(12),
      acknowledgedAt: s(13),
      acknowledgedBy: 'ops',
      resolvedAt: s(30),
      resolution: 'cleared',
    })
    facts.actions.push({
      id: 9,
      kind: 'STOP_TASK',
      state: 'SUCCEEDED',
      requestedAt: s(60),
      finishedAt: s(61),
      requestedBy: null,
      refusal: null,
      ret: 0,
      message: null,
    })
    facts.recordings.push(
      { id: 1, fileName: 'a.mp4', fromCallback: true, fromList: true, firstSeenAt: s(90) },
      { id: 2, fileName: 'b.mp4', fromCallback: false, fromList: true, firstSeenAt: s(95) },
    )
    facts.deliveries.push({
      id: 5,
      endpoint: 'ops',
      eventType: 'task.ended',
      status: 'DELIVERED',
      attempts: 1,
      lastStatusCode: 200,
      at: s(71),
      finishedAt: s(72),
    })
    const line = foldTimeline(facts).map((entry) => [entry.kind, entry.source, entry.subject?.type ?? null])
    expect(line).toEqual([
      ['CALLBACK', 'PUSHED', 'Notification'],
      ['STATUS', 'PUSHED', null],
      ['LISTED', 'POLLED', null],
      ['AUDIENCE', 'POLLED', null],
      ['HEALTH', 'INFERRED', null],
      ['INCIDENT', 'INFERRED', 'Incident'],
      ['INCIDENT', 'DONE', 'Incident'],
      ['RECONNECT', 'PUSHED', 'Notification'],
      ['RECONNECT', 'PUSHED', 'Notification'],
      ['INCIDENT', 'INFERRED', 'Incident'],
      ['ACTION', 'DONE', 'Action'],
      ['ACTION', 'DONE', 'Action'],
      ['STATUS', 'INFERRED', null],
      ['WEBHOOK', 'DONE', null],
      ['CALLBACK_MISSING', 'INFERRED', null],
      ['RECORDING', 'PUSHED', 'Recording'],
      ['RECORDING', 'POLLED', 'Recording'],
    ])
  })

  it('says a start was polled when no type 0 came before it, and orders one instant by key', () => {
    const facts = empty()
    facts.events.push({ id: 2, type: 'task.started', at: s(1), facts: {} })
    facts.callbacks.push({ id: 1, type: 0, at: s(1), status: null, fileName: null })
    facts.events.push({ id: 3, type: 'task.ended', at: s(2), facts: { endReason: 'STOPPED' } })
    const line = foldTimeline(facts)
    expect(line.map((entry) => entry.key)).toEqual(['c0000000000000001', 'e0000000000000002', 'e0000000000000003'])
    expect(line.map((entry) => entry.source)).toEqual(['PUSHED', 'PUSHED', 'POLLED'])
  })

  it("tells a start and an end from the task's state when no derived event does (webhooks off)", () => {
    const { liveStart, liveEnd } = sampleCallbacks('t', 'CODE') as Record<string, Record<string, string>>
    let state = emptyTaskState('CODE', 't')
    for (const [fields, at] of [
      [liveStart, s(0)],
      [liveEnd, s(60)],
    ] as const) {
      const parsed = parseCallback(fields as Record<string, string>)
      if (!parsed.ok) throw new Error(parsed.error.message)
      state = applyTaskCallback(state, {
        source: 'callback',
        stamp: { at, key: `k${at}` },
        receivedAt: at,
        callback: parsed.callback,
      })
    }
    const facts = empty()
    facts.task = state
    facts.callbacks.push(
      { id: 1, type: 0, at: s(0), status: null, fileName: null },
      { id: 2, type: 1, at: s(60), status: null, fileName: null },
    )
    const status = () => foldTimeline(facts).filter((entry) => entry.kind === 'STATUS')
    expect(status().map((entry) => [entry.source, entry.summary])).toEqual([
      ['PUSHED', 'status LIVE: started'],
      ['PUSHED', 'status ENDED (USER_STOPPED)'],
    ])
    // A derived event, when there is one, is the entry: the state adds none beside it.
    facts.events.push({ id: 1, type: 'task.started', at: s(1), facts: {} })
    expect(status().filter((entry) => /LIVE/.test(entry.summary))).toHaveLength(1)
  })
})
