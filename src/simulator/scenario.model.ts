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
  /**
   * Audiences that rise and fall (some tasks in the thousands), and the cloud's mishaps: a stalled
   * input, a counter reset, a task whose start callbacks the cloud "forgets" (see audience.plan.ts).
   */
  audience?: boolean
  /**
   * Paced like a day of a service rather than packed to `rate`: see {@link DayProfile}. Without
   * it (the tests' scenarios) the whole timeline is spread to `rate` and tasks live seconds.
   */
  day?: DayProfile
  /**
   * Faults of a whole service code, each code this many times over the scenario (none unless
   * asked): its audience drops away for a while, and its task list goes stale (see fault.plan.ts).
   */
  serviceFaults?: number
}

/**
 * The demo's pacing: each step of a session's life lasts `unitMs` (tasks live minutes), the first
 * `marathons` sessions start at once and stay live for the whole scenario, and each input's
 * bitrate sways over `swayPeriodMs` so its sparkline has a shape. `rate` is then unused.
 */
export interface DayProfile {
  unitMs: number
  marathons: number
  swayPeriodMs: number
}

/** `livegate demo`'s day: steps of 18 s (tasks of 1 to 3 minutes, rounds of 9 to 13), three tasks live throughout. */
export const DEMO_DAY: DayProfile = { unitMs: 18_000, marathons: 3, swayPeriodMs: 150_000 }

/** How a session's audience and counters go over its life, with its mishaps; times from the scenario's start. */
export interface SessionAudience {
  /** The most concurrent flv viewers: the audience rises from 0 to it and falls back while listed. */
  peak: number
  /** While the input delivers nothing: `input_bytes` stays as it was. */
  stall: { fromMs: number; untilMs: number } | null
  /** While the input starves: it delivers {@link THIN_SHARE} of its rate; its bits/s fall, its bytes still grow. */
  thin?: { fromMs: number; untilMs: number } | null
  /** When the counters restart from 0 (a restart in the cloud). */
  resetAtMs: number | null
  /** The cloud never sends this session's type 0 callbacks. */
  forgetsStart: boolean
  /** The input's bitrate sways ±25% over this period (the demo's day); steady when absent. */
  swayPeriodMs?: number
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
  /** With `audience`: how its viewers and counters go; else constant viewers and steady counters. */
  audience?: SessionAudience
}

/** One notification callback, due `atMs` after the scenario's start. */
export interface ScenarioCallback {
  atMs: number
  type: number
  serviceCode: string
  taskId: string
  fields: Record<string, string>
}

/**
 * A fault of a whole service code, while `fromMs <= t < untilMs`: its audience drops away (every
 * task's viewers read 0), or its task list goes stale (answers HTTP 503, or hangs until the end).
 */
export interface ServiceFault {
  kind: 'audience-drop' | 'stale-list'
  serviceCode: string
  fromMs: number
  untilMs: number
  /** How a stale list fails. */
  mode?: 'errors' | 'hangs'
}

/** A generated scenario: the sessions, their callbacks in time order, and how long it lasts. */
export interface Scenario {
  seed: number
  epochMs: number
  sessions: ScenarioSession[]
  callbacks: ScenarioCallback[]
  durationMs: number
  /** With `serviceFaults`: the faults of whole service codes. */
  serviceFaults?: ServiceFault[]
}

/** What share of its rate a starving input delivers. */
export const THIN_SHARE = 0.05

/** The epoch a scenario is generated at unless told: the service's sampled live start. */
export const DEFAULT_EPOCH_MS = 1_444_701_446_000

/** The codec ids task_list gives its video (H.264) and audio (AAC) streams. */
export const CODEC_IDS = { video: 27, audio: 86_018 } as const

/** What the counters of a session read `atMs` after the scenario's start. */
export function countersAt(
  session: ScenarioSession,
  output: ScenarioOutput | undefined,
  atMs: number,
): { seconds: number; inputBytes: number; httpOutputBytes: number } {
  const seconds = Math.max(0, atMs - session.liveFromMs) / 1000
  if (session.audience) return audienceCounters(session, session.audience, output, atMs, seconds)
  const httpOutputBytes =
    output?.container === 'flv' ? Math.floor((session.viewers * output.videoBitRate * seconds) / 8) : 0
  return { seconds, inputBytes: Math.floor(session.inputBytesPerSecond * seconds), httpOutputBytes }
}

/** `yyyymmdd/hh/mm` of a Unix seconds time in UTC: the layout of the service's sampled paths. */
export function datePath(createdAt: number): string {
  const iso = new Date(createdAt * 1000).toISOString()
  return `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}/${iso.slice(11, 13)}/${iso.slice(14, 16)}`
}

/** Concurrent flv viewers of a session with an audience `atMs` after the scenario's start: an arc over its listing. */
export function viewersAt(session: ScenarioSession, atMs: number): number {
  if (!session.audience) return atMs >= session.liveFromMs ? session.viewers : 0
  return Math.round(session.audience.peak * arc(session, atMs))
}

function arc(session: ScenarioSession, atMs: number): number {
  const span = session.listedUntilMs - session.liveFromMs
  if (span <= 0 || atMs <= session.liveFromMs) return 0
  return Math.sin(Math.PI * Math.min(1, (atMs - session.liveFromMs) / span))
}

// How far an input's bitrate sways either side of its steady rate, with `swayPeriodMs`.
const SWAY = 0.25

// The counters with an audience: input bytes grow except while stalled, output bytes follow the
// audience (its integral), and both start again from 0 at a reset.
function audienceCounters(
  session: ScenarioSession,
  audience: SessionAudience,
  output: ScenarioOutput | undefined,
  atMs: number,
  seconds: number,
) {
  const from = audience.resetAtMs !== null && atMs >= audience.resetAtMs ? audience.resetAtMs : session.liveFromMs
  const to = Math.max(from, atMs)
  // Input milliseconds at the steady rate up to t: t itself, or its integral under a sway.
  const period = audience.swayPeriodMs
  const inputMs = period
    ? (t: number) => {
        const x = Math.max(0, t - session.liveFromMs)
        return x + ((SWAY * period) / (2 * Math.PI)) * (1 - Math.cos((2 * Math.PI * x) / period))
      }
    : (t: number) => t
  const stallFrom = audience.stall ? Math.max(from, audience.stall.fromMs) : 0
  const stallTo = audience.stall ? Math.min(to, audience.stall.untilMs) : 0
  const stalled = stallTo > stallFrom ? inputMs(stallTo) - inputMs(stallFrom) : 0
  // A starving input loses all but THIN_SHARE of its rate over its window.
  const thinFrom = audience.thin ? Math.max(from, audience.thin.fromMs) : 0
  const thinTo = audience.thin ? Math.min(to, audience.thin.untilMs) : 0
  const starved = thinTo > thinFrom ? (1 - THIN_SHARE) * (inputMs(thinTo) - inputMs(thinFrom)) : 0
  const delivered = inputMs(to) - inputMs(from) - stalled - starved
  const inputBytes = Math.floor((session.inputBytesPerSecond * delivered) / 1000)
  if (output?.container !== 'flv') return { seconds, inputBytes, httpOutputBytes: 0 }
  const span = session.listedUntilMs - session.liveFromMs
  // The integral of peak × sin(π t / span) over [from, to], in viewer-seconds.
  const phase = (t: number) => Math.PI * Math.min(1, Math.max(0, t - session.liveFromMs) / span)
  const viewerSeconds =
    span > 0 ? ((audience.peak * span) / 1000 / Math.PI) * (Math.cos(phase(from)) - Math.cos(phase(to))) : 0
  return { seconds, inputBytes, httpOutputBytes: Math.floor((output.videoBitRate / 8) * viewerSeconds) }
}
