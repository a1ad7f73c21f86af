/**
 * The folded graph: what the GraphQL types expose. Plain data, produced by the pure fold from
 * task_list snapshots and stored callbacks; times are Dates, sizes numbers.
 */

/** Where a task is in its life. */
export type TaskStatus = 'LIVE' | 'WAITING_RECONNECT' | 'ENDED'

/** Why a task ended. */
export type EndReason = 'USER_STOPPED' | 'ABNORMAL' | 'VANISHED' | 'STOPPED'

/** `codec_type` of a stream. */
export type StreamKind = 'VIDEO' | 'AUDIO'

/** `copy` of a stream: 1 copies the input; the description says 2, the samples 0, for transcoding. */
export type CopyMode = 'COPY' | 'TRANSCODE'

/** Why a mobile client disconnected (type 8 `disconnect_reason`). */
export type DisconnectReason = 'NETWORK_TIMEOUT' | 'CLIENT_CLOSED' | 'PROTOCOL_ERROR'

/** The published `disconnect_reason` codes; any other code has no name. */
export const DISCONNECT_REASON_BY_CODE: Readonly<Record<number, DisconnectReason>> = {
  0: 'NETWORK_TIMEOUT',
  1: 'CLIENT_CLOSED',
  2: 'PROTOCOL_ERROR',
}

/** Where a live resume stands (type 15 `status`). */
export type ResumeStatus = 'WAITING' | 'RESUMED'

/** The published type 15 `status` codes; any other code has no name. */
export const RESUME_STATUS_BY_CODE: Readonly<Record<number, ResumeStatus>> = { 0: 'WAITING', 1: 'RESUMED' }

export interface MediaFormatNode {
  container: string
  videoCodec: string | null
  audioCodec: string | null
}

export interface StreamNode {
  index: number | null
  kind: StreamKind | null
  codecId: number | null
  width: number | null
  height: number | null
  copyMode: CopyMode | null
  bitRate: number | null
}

/** An archived file (type 2). */
export interface RecordingNode {
  outputIndex: number | null
  tag: string | null
  url: string | null
  path: string | null
  fileName: string | null
  format: MediaFormatNode | null
  width: number | null
  height: number | null
  duration: number | null
  inputBytes: number | null
  httpOutputBytes: number | null
  createdAt: Date | null
  receivedAt: Date
}

/** One output format of a task, joined from task_list, type 0, type 1 and type 2. */
export interface OutputNode {
  /** `output_idx` where a callback gave it, else the position in the task_list outputs. */
  index: number | null
  tag: string | null
  format: MediaFormatNode | null
  playUrl: string | null
  /** `svod_url`: plays from the beginning while the live runs (flv only). */
  timeShiftUrl: string | null
  fileName: string | null
  relativeDir: string | null
  width: number | null
  height: number | null
  httpOutputBytes: number | null
  connections: number | null
  streams: StreamNode[]
  /** When this output became playable (type 0 received). */
  startedAt: Date | null
  /** When this output ended (type 1 received). */
  endedAt: Date | null
  recordings: RecordingNode[]
}

export interface InputNode {
  url: string | null
  serviceCode: string | null
  userName: string | null
  deviceType: number | null
  deviceVersion: string | null
}

export interface ThumbnailNode {
  url: string | null
  path: string | null
  fileName: string | null
  width: number | null
  height: number | null
  receivedAt: Date
}

/** A type 15 notification: 0 waits for a reconnect, 1 resumed. */
export interface ResumeNode {
  status: ResumeStatus
  at: Date
}

export interface TaskNode {
  /** The `hashed_id` (task_list `id`). */
  id: string
  serviceCode: string
  vsId: string | null
  author: string | null
  status: TaskStatus
  endReason: EndReason | null
  isResume: boolean | null
  liveOnly: boolean | null
  opaque: string | null
  /** The live start by the service's clock (`created_at`), else first sight. */
  startedAt: Date | null
  endedAt: Date | null
  /** Whether the latest successful task_list answer listed the task. */
  listed: boolean
  firstSeenAt: Date | null
  lastSeenAt: Date | null
  /** The latest task_list answer that said something of the task: listed it, or first left it out. */
  confirmedAt: Date | null
  httpLiveUrl: string | null
  inputBytes: number | null
  outputs: OutputNode[]
  inputs: InputNode[]
  recordings: RecordingNode[]
  thumbnails: ThumbnailNode[]
  resumes: ResumeNode[]
}

export interface DisconnectNode {
  reason: DisconnectReason | null
  reasonCode: number | null
  sessionDuration: number | null
  at: Date
}

export interface UserNode {
  serviceCode: string
  userName: string
  vsId: string | null
  clientVersion: string | null
  deviceType: string | null
  /** Listed by the latest successful task_list answer. */
  online: boolean
  firstSeenAt: Date | null
  lastSeenAt: Date | null
  disconnects: DisconnectNode[]
  resumes: ResumeNode[]
}
