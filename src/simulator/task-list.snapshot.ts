import { audienceDropped } from './fault.plan.js'
import {
  CODEC_IDS,
  countersAt,
  viewersAt,
  type Scenario,
  type ScenarioOutput,
  type ScenarioSession,
} from './scenario.model.js'

/** A stream as task_list sends it. */
export interface SimulatedStream {
  index: number
  /** 0 video, 1 audio. */
  codec_type: number
  codec_id: number
  width: number
  height: number
  copy: number
  bit_rate: number
}

/** An output as task_list sends it. */
export interface SimulatedOutput {
  file_name: string
  tag: string
  audio_codec_name: string
  video_codec_name: string
  format: string
  width: number
  height: number
  relative_dir: string
  http_output_bytes: number
  http_connections_num: number
  streams: SimulatedStream[]
  live_url: string
}

/** An input as task_list sends it. */
export interface SimulatedInput {
  url: string
  service_code: string
  user_name: string
  device_type: number
  device_version: string
}

/** A task as task_list sends it. */
export interface SimulatedTask {
  id: string
  serial: number
  sequence: number
  progress: number
  vs_id: string
  service_code: string
  outputs: SimulatedOutput[]
  inputs: SimulatedInput[]
  http_live_url: string
  input_bytes: number
  opaque: string
}

/** A user as task_list sends it (the sampled shape, without the per-call `id`). */
export interface SimulatedUser {
  vs_id: string
  service_code: string
  user_name: string
  client_version: string
  device_type: string
}

/** The lists of a task_list answer; the server adds `ret`. */
export interface SimulatedTaskList {
  task_list: SimulatedTask[]
  user_list: SimulatedUser[]
}

/** Nothing live: what task_list answers before a scenario starts. */
export const EMPTY_TASK_LIST: SimulatedTaskList = Object.freeze({ task_list: [], user_list: [] }) as SimulatedTaskList

/**
 * What task_list answers for one service code `elapsedMs` after the scenario's start: the tasks
 * listed at that moment, their byte counters grown since the live start, and the users online
 * (each user once, however many of their sessions overlap).
 */
export function taskListAt(
  scenario: Scenario,
  serviceCode: string,
  elapsedMs: number,
  unseen?: (taskId: string) => boolean,
): SimulatedTaskList {
  const mine = scenario.sessions.filter((session) => session.serviceCode === serviceCode)
  // While the code's audience has dropped away, every task of it is watched by nobody.
  const watched = !audienceDropped(scenario, serviceCode, elapsedMs)
  const listed = mine.filter((session) => session.listedFromMs <= elapsedMs && elapsedMs < session.listedUntilMs)
  const task_list = listed.map((session) => taskOf(session, elapsedMs, watched))
  // A real task is listed for minutes, far longer than any poll interval; a scenario played fast
  // lists one for a fraction of a second, which a poller on a busy machine can miss entirely. A
  // task that vanishes (no end callback: only the list tells) is therefore listed once more, as it
  // was last, until an answer has shown it; `unseen` says which task ids no answer has shown yet.
  if (unseen) {
    for (const session of mine) {
      if (
        session.ending === 'VANISHED' &&
        elapsedMs >= session.listedUntilMs &&
        session.listedFromMs < session.listedUntilMs &&
        unseen(session.taskId)
      ) {
        task_list.push(taskOf(session, session.listedUntilMs - 1))
      }
    }
  }
  const users = new Map<string, SimulatedUser>()
  for (const session of mine) {
    if (session.userOnlineFromMs <= elapsedMs && elapsedMs < session.userOnlineUntilMs && !users.has(session.author)) {
      users.set(session.author, {
        vs_id: session.vsId,
        service_code: session.serviceCode,
        user_name: session.author,
        client_version: session.cversion,
        device_type: String(session.ctype),
      })
    }
  }
  return { task_list, user_list: [...users.values()] }
}

function taskOf(session: ScenarioSession, elapsedMs: number, watched = true): SimulatedTask {
  return {
    id: session.taskId,
    serial: session.serial,
    sequence: session.sequence,
    progress: 0,
    vs_id: session.vsId,
    service_code: session.serviceCode,
    outputs: session.outputs.map((output) => outputOf(session, output, elapsedMs, watched)),
    inputs: [
      {
        url: session.inputUrl,
        service_code: session.serviceCode,
        user_name: session.author,
        device_type: session.ctype,
        device_version: session.cversion,
      },
    ],
    http_live_url: session.httpLiveUrl,
    input_bytes: countersAt(session, undefined, elapsedMs).inputBytes,
    opaque: session.opaque,
  }
}

function outputOf(session: ScenarioSession, output: ScenarioOutput, elapsedMs: number, watched: boolean) {
  // Only the HTTP flv output counts bytes and connections; the service gives 0 for the others.
  const flv = output.container === 'flv'
  return {
    file_name: output.fileName,
    tag: output.tag,
    audio_codec_name: output.audioCodec,
    video_codec_name: output.videoCodec,
    format: output.container,
    width: output.width,
    height: output.height,
    relative_dir: output.relativeDir,
    http_output_bytes: countersAt(session, output, elapsedMs).httpOutputBytes,
    http_connections_num: flv && watched ? viewersAt(session, elapsedMs) : 0,
    streams: [
      {
        index: 0,
        codec_type: 0,
        codec_id: CODEC_IDS.video,
        width: output.width,
        height: output.height,
        copy: output.copy,
        bit_rate: output.videoBitRate,
      },
      {
        index: 1,
        codec_type: 1,
        codec_id: CODEC_IDS.audio,
        width: 0,
        height: 0,
        copy: output.copy,
        bit_rate: output.audioBitRate,
      },
    ],
    live_url: output.liveUrl,
  }
}
