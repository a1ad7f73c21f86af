import { type MediaFormat, readOpaque } from '../model/callback.fields.js'
import type { UpstreamOutput, UpstreamStream } from '../model/task-list.schema.js'
import {
  type EndReason,
  type MediaFormatNode,
  type OutputNode,
  RESUME_STATUS_BY_CODE,
  type RecordingNode,
  type StreamNode,
  type TaskNode,
  type TaskStatus,
} from './graph.model.js'
import { compareStamps, maxOf, minOf, type Register } from './lattice.rules.js'
import { isListed, type OutputState, outputKey, type RecordingFacts, type TaskState } from './task.fold.js'

/**
 * The fold's rules, in the order they are tried (README, "How a task's state is derived"):
 *
 * | status | endReason | when |
 * | --- | --- | --- |
 * | ENDED | USER_STOPPED / ABNORMAL | the latest type 1 is not older than the latest type 0; its `reach_end` (1 / 0)
 * says why |
 * | ENDED | VANISHED | no such type 1, and the latest successful task_list answer no longer lists a task it listed
 * before |
 * | ENDED | STOPPED | either of the two above, after a stop asked through livegate that the cloud accepted (whatever
 * the type 1 said) |
 * | WAITING_RECONNECT | null | the latest type 15 says status 0 and is newer than the latest type 0 |
 * | ENDED | null | never started nor listed, but an archived file (type 2) exists |
 * | LIVE | null | otherwise |
 *
 * "Latest" is by the service's signed timestamp, so arrival order never matters.
 */
export function deriveStatus(state: TaskState): {
  status: TaskStatus
  endReason: EndReason | null
  endedAt: number | null
} {
  const ended = deriveStatusFromCloud(state)
  // A stop the cloud accepted explains the end the callback or the list then reports; until one
  // of them does, the task runs (an action is confirmed by what the cloud says, never assumed).
  if (ended.status === 'ENDED' && ended.endReason !== null && state.stoppedAt != null)
    return { ...ended, endReason: 'STOPPED' }
  return ended
}

function deriveStatusFromCloud(state: TaskState): {
  status: TaskStatus
  endReason: EndReason | null
  endedAt: number | null
} {
  const { start, end, resume, sighting } = state
  if (end && (!start || compareStamps(end.stamp, start.stamp) >= 0)) {
    return { status: 'ENDED', endReason: end.value.reachEnd ? 'USER_STOPPED' : 'ABNORMAL', endedAt: end.stamp.at }
  }
  if (sighting.lastSeenAt !== null && !isListed(state)) {
    return { status: 'ENDED', endReason: 'VANISHED', endedAt: sighting.lastSeenAt }
  }
  if (resume && resume.value === 0 && (!start || compareStamps(resume.stamp, start.stamp) > 0)) {
    return { status: 'WAITING_RECONNECT', endReason: null, endedAt: null }
  }
  if (!start && sighting.lastSeenAt === null && state.recordings.length > 0) {
    return { status: 'ENDED', endReason: null, endedAt: null }
  }
  return { status: 'LIVE', endReason: null, endedAt: null }
}

/** The time a task is sorted by, newest first: its live start, else when it was first seen. */
export function taskSortTime(state: TaskState): number {
  return state.firstCreatedAt ?? minOf(state.sighting.firstSeenAt, state.firstEventAt) ?? 0
}

/** Who started the live: the notifications' `author`, else the task list's first input. */
export function taskAuthor(state: TaskState): string | null {
  return state.author?.value ?? state.sighting.task?.value.inputs[0]?.user_name ?? null
}

/**
 * Whether a task is live only: what ended it decides (a type 1 not older than the latest type 0),
 * since the flag may change during a live and the end is what the archive acts on; else its start.
 * An end that does not send `live_only` (its fact is null) decides nothing.
 */
function deriveLiveOnly({ start, end }: TaskState): boolean | null {
  const endDecides = end?.value.liveOnly != null && (!start || compareStamps(end.stamp, start.stamp) >= 0)
  return (endDecides ? end?.value.liveOnly : start?.value.liveOnly) ?? end?.value.liveOnly ?? null
}

/** The graph's view of a task's state. */
export function deriveTask(state: TaskState): TaskNode {
  const { status, endReason, endedAt } = deriveStatus(state)
  const listedTask = state.sighting.task?.value ?? null
  const start = state.start?.value ?? null
  const recordings = [...state.recordings].sort(byStampAscending).map(recordingNode)
  const startedAt = state.firstCreatedAt ?? state.sighting.firstSeenAt ?? state.firstEventAt
  return {
    id: state.taskId,
    serviceCode: state.serviceCode,
    vsId: state.vsId?.value ?? listedTask?.vs_id ?? null,
    author: taskAuthor(state),
    status,
    endReason,
    isResume: start?.isResume ?? null,
    liveOnly: deriveLiveOnly(state),
    opaque: start?.opaque ?? (listedTask?.opaque !== undefined ? readOpaque(listedTask.opaque) : null),
    startedAt: toDate(startedAt),
    endedAt: toDate(endedAt),
    listed: isListed(state),
    firstSeenAt: toDate(state.sighting.firstSeenAt),
    lastSeenAt: toDate(state.sighting.lastSeenAt),
    confirmedAt: toDate(maxOf(state.sighting.lastSeenAt, state.sighting.lastAbsentAt)),
    httpLiveUrl: listedTask?.http_live_url ?? null,
    inputBytes: maxOf(listedTask?.input_bytes ?? null, state.end?.value.inputBytes ?? null),
    outputs: deriveOutputs(state, recordings),
    inputs: (listedTask?.inputs ?? []).map((input) => ({
      url: input.url ?? null,
      serviceCode: input.service_code ?? null,
      userName: input.user_name ?? null,
      deviceType: input.device_type ?? null,
      deviceVersion: input.device_version ?? null,
    })),
    recordings,
    thumbnails: [...state.thumbnails]
      .sort((a, b) => compareStamps(b.stamp, a.stamp))
      .map(({ value }) => ({ ...value, receivedAt: new Date(value.receivedAt) })),
    resumes: [...state.resumes]
      .sort(byStampAscending)
      .map(({ stamp, value }) => ({ status: RESUME_STATUS_BY_CODE[value] ?? 'WAITING', at: new Date(stamp.at) })),
  }
}

/**
 * Outputs are the union of what task_list lists now and what callbacks announced, joined on
 * tag and container. Positions in the task_list are output indexes unless a type 1 says otherwise.
 */
function deriveOutputs(state: TaskState, recordings: RecordingNode[]): OutputNode[] {
  const listedOutputs = state.sighting.task?.value.outputs ?? []
  const listedByKey = new Map<string, { output: UpstreamOutput; position: number }>()
  listedOutputs.forEach((output, position) => {
    listedByKey.set(outputKey(output.tag, output.format), { output, position })
  })
  const keys = [...new Set([...listedByKey.keys(), ...Object.keys(state.outputs)])].sort()
  const outputs = keys.map((key) =>
    outputNode(
      Object.hasOwn(state.outputs, key) ? (state.outputs[key] as OutputState) : { start: null, end: null },
      listedByKey.get(key),
      recordings,
    ),
  )
  return outputs.sort((a, b) => (a.index ?? Number.MAX_SAFE_INTEGER) - (b.index ?? Number.MAX_SAFE_INTEGER))
}

function outputNode(
  own: OutputState,
  listed: { output: UpstreamOutput; position: number } | undefined,
  recordings: RecordingNode[],
): OutputNode {
  const start = own.start?.value ?? null
  const end = own.end?.value ?? null
  const output = listed?.output
  const index = end?.outputIdx ?? listed?.position ?? null
  const tag = output?.tag ?? start?.tag ?? end?.tag ?? null
  return {
    index,
    tag,
    format: listedFormat(output) ?? formatNode(start?.format ?? end?.format ?? null),
    playUrl: start?.url ?? output?.live_url ?? null,
    timeShiftUrl: start?.svodUrl ?? null,
    fileName: output?.file_name ?? null,
    relativeDir: output?.relative_dir ?? null,
    width: output?.width ?? start?.size?.width ?? null,
    height: output?.height ?? start?.size?.height ?? null,
    httpOutputBytes: maxOf(output?.http_output_bytes ?? null, end?.httpOutputBytes ?? null),
    connections: output?.http_connections_num ?? null,
    streams: (output?.streams ?? []).map(streamNode),
    startedAt: toDate(start?.receivedAt ?? null),
    endedAt: toDate(
      own.end && (!own.start || compareStamps(own.end.stamp, own.start.stamp) >= 0) ? own.end.value.receivedAt : null,
    ),
    recordings: recordings.filter(
      (recording) =>
        (index !== null && recording.outputIndex === index) ||
        (recording.outputIndex === null && tag !== null && recording.tag === tag),
    ),
  }
}

function streamNode(stream: UpstreamStream): StreamNode {
  return {
    index: stream.index ?? null,
    kind: stream.codec_type === 0 ? 'VIDEO' : stream.codec_type === 1 ? 'AUDIO' : null,
    codecId: stream.codec_id ?? null,
    width: stream.width ?? null,
    height: stream.height ?? null,
    // The description says 2 means "not copied"; the samples show 0. Both read as transcoding.
    copyMode: stream.copy === 1 ? 'COPY' : stream.copy === 0 || stream.copy === 2 ? 'TRANSCODE' : null,
    bitRate: stream.bit_rate ?? null,
  }
}

/** An archived file (type 2) as the graph names it. */
export function recordingNode({ value }: Register<RecordingFacts>): RecordingNode {
  return {
    outputIndex: value.outputIdx,
    tag: value.tag,
    url: value.url,
    path: value.path,
    fileName: value.fileName,
    format: formatNode(value.format),
    width: value.size?.width ?? null,
    height: value.size?.height ?? null,
    duration: value.duration,
    inputBytes: value.inputBytes,
    httpOutputBytes: value.httpOutputBytes,
    createdAt: toDate(value.createdAt),
    receivedAt: new Date(value.receivedAt),
  }
}

function listedFormat(output: UpstreamOutput | undefined): MediaFormatNode | null {
  if (!output?.format) return null
  return {
    container: output.format,
    videoCodec: output.video_codec_name ?? null,
    audioCodec: output.audio_codec_name ?? null,
  }
}

function formatNode(format: MediaFormat | null): MediaFormatNode | null {
  return format
    ? { container: format.container, videoCodec: format.videoCodec ?? null, audioCodec: format.audioCodec ?? null }
    : null
}

function byStampAscending<T>(a: Register<T>, b: Register<T>): number {
  return compareStamps(a.stamp, b.stamp)
}

function toDate(ms: number | null): Date | null {
  return ms === null ? null : new Date(ms)
}
