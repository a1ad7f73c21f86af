import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { CallbackEvent, TaskSightingEvent } from '../../src/fold/fold.event.js'
import { deriveTask } from '../../src/fold/task.derive.js'
import { applyTaskCallback, applyTaskSighting, emptyTaskState, type TaskState } from '../../src/fold/task.fold.js'
import { parseCallback } from '../../src/model/callback.parse.js'
import type { UpstreamTask } from '../../src/model/task-list.schema.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'

const TASK = 'aws-cn_north_1-5-a6eaff8eeef36a3b'
const samples = sampleCallbacks(TASK)

let keySeq = 0
/** A callback event at service time `at` (ms) with the given fields. */
function event(fields: Record<string, string>, at: number, key = `k${keySeq++}`): CallbackEvent {
  const parsed = parseCallback(fields)
  if (!parsed.ok) throw new Error(parsed.error.message)
  return { source: 'callback', stamp: { at, key }, receivedAt: at + 5, callback: parsed.callback }
}

function sighting(at: number, task: UpstreamTask | null): TaskSightingEvent {
  return { source: 'sighting', serviceCode: 'TESTING', taskId: TASK, takenAt: at, task }
}

const listedTask: UpstreamTask = {
  id: TASK,
  vs_id: 'xvs-5',
  service_code: 'TESTING',
  http_live_url: 'http://xvs-5.example:80/live/id/',
  input_bytes: 4096,
  opaque: 'order%3D42',
  inputs: [{ url: '', service_code: 'TESTING', user_name: 'alice', device_type: 10, device_version: '451' }],
  outputs: [
    {
      tag: 'tcp_output_live_only',
      format: 'flv',
      video_codec_name: 'libx264',
      audio_codec_name: 'aac',
      width: 480,
      height: 800,
      file_name: 'live.flv',
      relative_dir: 'TESTING/live/',
      http_output_bytes: 2048,
      http_connections_num: 3,
      live_url: 'http://xvs-5.example/live.flv',
      streams: [
        { index: 0, codec_type: 0, codec_id: 28, width: 480, height: 800, copy: 1, bit_rate: 800_000 },
        { index: 1, codec_type: 1, codec_id: 86018, width: 0, height: 0, copy: 0, bit_rate: 64_000 },
      ],
    },
  ],
}

type Applied = CallbackEvent | TaskSightingEvent
function fold(events: Applied[]): TaskState {
  return events.reduce<TaskState>(
    (state, e) => ('callback' in e ? applyTaskCallback(state, e) : applyTaskSighting(state, e)),
    emptyTaskState('TESTING', TASK),
  )
}
const derived = (events: Applied[]) => deriveTask(fold(events))

describe('the fold rules', () => {
  it('a live start makes a LIVE task with its start time, author and output', () => {
    const task = derived([event(samples.liveStart as Record<string, string>, 1_000)])
    expect(task).toMatchObject({
      status: 'LIVE',
      endReason: null,
      author: 'alice',
      isResume: false,
      liveOnly: false,
      opaque: 'order=42&room=7',
      startedAt: new Date(1444701446 * 1000),
    })
    expect(task.outputs).toHaveLength(1)
    expect(task.outputs[0]).toMatchObject({
      tag: 'tcp_output_live_only',
      playUrl: expect.stringContaining('.flv'),
      timeShiftUrl: expect.stringContaining('live=1'),
      width: 480,
      height: 800,
    })
  })

  it.each([
    ['1', 'USER_STOPPED'],
    ['0', 'ABNORMAL'],
  ])('a live end with reach_end=%s ends the task as %s', (reachEnd, reason) => {
    const task = derived([
      event(samples.liveStart as Record<string, string>, 1_000),
      event({ ...samples.liveEnd, reach_end: reachEnd } as Record<string, string>, 2_000),
    ])
    expect(task).toMatchObject({ status: 'ENDED', endReason: reason, endedAt: new Date(2_000) })
  })

  it('type 15 status 0 waits for a reconnect until status 1', () => {
    const start = event(samples.liveStart as Record<string, string>, 1_000)
    const waiting = event({ ...samples.liveResume, status: '0' } as Record<string, string>, 2_000)
    const resumed = event({ ...samples.liveResume, status: '1' } as Record<string, string>, 3_000)
    expect(derived([start, waiting]).status).toBe('WAITING_RECONNECT')
    const task = derived([start, waiting, resumed])
    expect(task.status).toBe('LIVE')
    expect(task.resumes).toEqual([
      { status: 'WAITING', at: new Date(2_000) },
      { status: 'RESUMED', at: new Date(3_000) },
    ])
  })

  it('a task the task list stops listing without an end callback VANISHED, at its last sighting', () => {
    const task = derived([
      event(samples.liveStart as Record<string, string>, 1_000),
      sighting(1_500, listedTask),
      sighting(11_500, listedTask),
      sighting(21_500, null),
    ])
    expect(task).toMatchObject({ status: 'ENDED', endReason: 'VANISHED', endedAt: new Date(11_500), listed: false })
  })

  it('an end callback outranks vanishing, and a listed task without callbacks is LIVE', () => {
    expect(derived([sighting(1_000, listedTask)])).toMatchObject({
      status: 'LIVE',
      listed: true,
      author: 'alice',
      startedAt: new Date(1_000),
    })
    const task = derived([
      sighting(1_000, listedTask),
      sighting(2_000, null),
      event(samples.liveEnd as Record<string, string>, 1_900),
    ])
    expect(task).toMatchObject({ status: 'ENDED', endReason: 'USER_STOPPED' })
  })

  it('what ended a task decides whether it is live only, not what started it', () => {
    const start = (flag: string) => event({ ...samples.liveStart, live_only: flag } as Record<string, string>, 1_000)
    const end = (flag: string) => event({ ...samples.liveEnd, live_only: flag } as Record<string, string>, 2_000)
    expect(derived([start('0')]).liveOnly).toBe(false)
    expect(derived([start('0'), end('1')]).liveOnly).toBe(true)
    expect(derived([end('0'), start('1')]).liveOnly).toBe(false)
    // Started again after the end: the new start decides until its own end.
    const restart = event({ ...samples.liveStart, live_only: '0' } as Record<string, string>, 3_000)
    expect(derived([start('1'), end('1'), restart]).liveOnly).toBe(false)
    // An end that does not say (no live_only: its fact is null) leaves the start's word standing.
    const { live_only: _unsaid, ...silentEnd } = { ...samples.liveEnd, live_only: '' }
    expect(derived([start('0'), event(silentEnd as Record<string, string>, 2_000)]).liveOnly).toBe(false)
  })

  it('a live start after an end (same task id) makes it LIVE again; a stale wait does not count', () => {
    const task = derived([
      event(samples.liveStart as Record<string, string>, 1_000),
      event({ ...samples.liveResume, status: '0' } as Record<string, string>, 1_500),
      event(samples.liveEnd as Record<string, string>, 2_000),
      event({ ...samples.liveStart, is_resume: '1' } as Record<string, string>, 3_000),
    ])
    expect(task).toMatchObject({ status: 'LIVE', isResume: true, endReason: null })
  })

  it('joins a task_list output with its type 0 and type 1 on tag and container', () => {
    const task = derived([
      sighting(500, listedTask),
      event(samples.liveStart as Record<string, string>, 1_000),
      event({ ...samples.liveEnd, http_output_bytes: '9999' } as Record<string, string>, 2_000),
      event(samples.archived as Record<string, string>, 2_500),
    ])
    expect(task.outputs).toHaveLength(1)
    expect(task.outputs[0]).toMatchObject({
      index: 0,
      format: { container: 'flv', videoCodec: 'libx264', audioCodec: 'aac' },
      playUrl: expect.stringContaining('.flv'),
      timeShiftUrl: expect.stringContaining('live=1'),
      connections: 3,
      httpOutputBytes: 9999,
      streams: [
        { index: 0, kind: 'VIDEO', codecId: 28, copyMode: 'COPY', bitRate: 800_000 },
        { index: 1, kind: 'AUDIO', copyMode: 'TRANSCODE' },
      ],
      endedAt: new Date(2_005),
    })
    expect(task.recordings).toHaveLength(1)
    expect(task.recordings[0]).toMatchObject({ outputIndex: 1, fileName: `${TASK}.mp4`, duration: 61.5 })
    expect(task).toMatchObject({
      inputBytes: 2097152,
      httpLiveUrl: 'http://xvs-5.example:80/live/id/',
      inputs: [{ userName: 'alice', deviceType: 10 }],
    })
  })

  it('an archive alone ends a task nobody saw start', () => {
    expect(derived([event(samples.archived as Record<string, string>, 1_000)])).toMatchObject({
      status: 'ENDED',
      endReason: null,
    })
  })

  it('keeps the five latest thumbnails, newest first', () => {
    const thumbs = Array.from({ length: 8 }, (_, i) =>
      event({ ...samples.thumbnail, file_name: `t${i}.jpg` } as Record<string, string>, 1_000 + i),
    )
    expect(derived(thumbs).thumbnails.map((t) => t.fileName)).toEqual([
      't7.jpg',
      't6.jpg',
      't5.jpg',
      't4.jpg',
      't3.jpg',
    ])
  })

  it('ignores callbacks about other tasks', () => {
    expect(
      derived([event({ ...samples.liveStart, hashed_id: 'other' } as Record<string, string>, 1_000)]).outputs,
    ).toEqual([])
  })
})

// Events of one task: every kind, a few tags and formats, with distinct stamps.
const eventArb: fc.Arbitrary<Applied> = fc.oneof(
  fc
    .record({
      kind: fc.constantFrom('liveStart', 'liveEnd', 'archived', 'thumbnail', 'liveResume'),
      at: fc.integer({ min: 0, max: 100 }),
      tag: fc.constantFrom('a', 'b'),
      format: fc.constantFrom('flv/libx264/aac', 'rtmp/libx264/aac'),
      flag: fc.constantFrom('0', '1'),
      idx: fc.constantFrom('0', '1'),
      key: fc.string({ minLength: 1, maxLength: 4 }),
    })
    .map(({ kind, at, tag, format, flag, idx, key }) =>
      event(
        {
          ...(samples[kind] as Record<string, string>),
          tag,
          format,
          reach_end: flag,
          status: flag,
          is_resume: flag,
          output_idx: idx,
          file_name: key,
        },
        at,
        // As the ingest's dedupe key does, the stamp names everything that varies: two callbacks
        // differing only in tag, format, flag or output were once one stamp (seed 1296065097).
        `${kind}${at}${key}/${tag}/${format}/${flag}/${idx}`,
      ),
    ),
  fc
    .record({ at: fc.integer({ min: 0, max: 100 }), listed: fc.boolean(), bytes: fc.nat() })
    .map(({ at, listed, bytes }) => sighting(at, listed ? { ...listedTask, input_bytes: bytes } : null)),
)

describe('the fold is order-free (properties)', () => {
  it('any order of arrival, with repeats, folds to the same state and the same graph', () => {
    fc.assert(
      fc.property(
        fc
          .array(eventArb, { maxLength: 25 })
          .chain((events) =>
            fc.tuple(
              fc.constant(events),
              fc.shuffledSubarray(events, { minLength: events.length, maxLength: events.length }),
              fc.subarray(events),
            ),
          ),
        ([events, shuffled, repeats]) => {
          // Two sightings at one instant with different content would be two answers at one millisecond.
          const times = events.filter((e) => !('callback' in e)).map((e) => (e as TaskSightingEvent).takenAt)
          fc.pre(new Set(times).size === times.length)
          const reference = fold(events)
          const other = fold([...shuffled, ...repeats])
          expect(other).toEqual(reference)
          expect(deriveTask(other)).toEqual(deriveTask(reference))
        },
      ),
      { numRuns: 500 },
    )
  })

  it('the state survives a JSON round trip (it is stored as jsonb) unchanged', () => {
    fc.assert(
      fc.property(fc.array(eventArb, { maxLength: 25 }), (events) => {
        const state = fold(events)
        const stored = JSON.parse(JSON.stringify(state)) as TaskState
        expect(deriveTask(stored)).toEqual(deriveTask(state))
        expect(fold(events)).toEqual(stored)
      }),
      { numRuns: 300 },
    )
  })
})
