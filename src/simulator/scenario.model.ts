/**
 * The data of a simulated scenario: live sessions as task_list shows them and the callbacks they
 * send. `session.scenario.ts` generates it; the task_list snapshot and the runner read it.
 */

/** What a scenario is generated from; the same options always give the same scenario. */
export interface ScenarioOptions {
  seed: number
  /** How many live sessions. */
  sessions: number
  /** The service codes the sessions are spread over, in turn. */
  serviceCodes: readonly string[]
  /** Average callbacks per second the timeline is spread over. */
  rate: number
  /** The wall-clock time of the scenario's start (Unix ms): `created_at` and paths count from it. */
  epochMs?: number
}

/** How a session ends: the user stops (`reach_end=1`), the server stops (`0`), or no end callback. */
export type SessionEnding = 'USER_STOPPED' | 'ABNORMAL' | 'VANISHED'

/** One output format of a session, as task_list and the callbacks describe it. */
export interface ScenarioOutput {
  index: number
  container: 'flv' | 'rtmp' | 'm3u8'
  tag: string
  /** `container/video-codec/audio-codec`. */
  format: string
  videoCodec: string
  audioCodec: string
  width: number
  height: number
  fileName: string
  relativeDir: string
  liveUrl: string
  /** The time-shift address: flv only. */
  svodUrl: string | null
  videoBitRate: number
  audioBitRate: number
  /** `copy` of its streams: 1 copies the input, 0 transcodes. */
  copy: 0 | 1
}

/** One live session; times are milliseconds from the scenario's start. */
export interface ScenarioSession {
  taskId: string
  serviceCode: string
  vsId: string
  author: string
  mobile: boolean
  ctype: number
  cversion: string
  liveOnly: boolean
  /** Percent-encoded, as the service samples it. */
  opaque: string
  ending: SessionEnding
  serial: number
  sequence: number
  httpLiveUrl: string
  inputUrl: string
  /** `created_at`: the live start in Unix seconds. */
  createdAt: number
  outputs: ScenarioOutput[]
  inputBytesPerSecond: number
  /** Concurrent viewers of the flv output. */
  viewers: number
  liveFromMs: number
  /** While task_list lists the task: from the start until its end or its vanishing. */
  listedFromMs: number
  listedUntilMs: number
  /** While task_list lists the author among the users. */
  userOnlineFromMs: number
  userOnlineUntilMs: number
}

/** One notification callback, due `atMs` after the scenario's start. */
export interface ScenarioCallback {
  atMs: number
  type: number
  serviceCode: string
  taskId: string
  fields: Record<string, string>
}

/** A generated scenario: the sessions, their callbacks in time order, and how long it lasts. */
export interface Scenario {
  seed: number
  epochMs: number
  sessions: ScenarioSession[]
  callbacks: ScenarioCallback[]
  durationMs: number
}

/** The epoch a scenario is generated at unless told: the service's sampled live start. */
export const DEFAULT_EPOCH_MS = 1_444_701_446_000

/** The codec ids task_list gives its video (H.264) and audio (AAC) streams. */
export const CODEC_IDS = { video: 27, audio: 86_018 } as const

/** What the counters of a session read `atMs` after the scenario's start. */
export function countersAt(session: ScenarioSession, output: ScenarioOutput | undefined, atMs: number): { seconds: number; inputBytes: number; httpOutputBytes: number } {
  const seconds = Math.max(0, atMs - session.liveFromMs) / 1000
  const httpOutputBytes = output?.container === 'flv' ? Math.floor((session.viewers * output.videoBitRate * seconds) / 8) : 0
  return { seconds, inputBytes: Math.floor(session.inputBytesPerSecond * seconds), httpOutputBytes }
}

/** `yyyymmdd/hh/mm` of a Unix seconds time in UTC: the layout of the service's sampled paths. */
export function datePath(createdAt: number): string {
  const iso = new Date(createdAt * 1000).toISOString()
  return `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}/${iso.slice(11, 13)}/${iso.slice(14, 16)}`
}
