import type { MediaFormatNode } from '../../../fold/graph.model.js'
import type { RecordingRow } from '../../../storage/tables/recording.table.js'
import { type CursorCodec, timeIdCursor } from '../connection.pagination.js'
import { toGlobalId } from '../global.id.js'
import type { RecordingKey } from '../../../storage/graph/recording.queries.js'

/** What a `Recording` resolves from: the catalogue's row, its global id, and where it was seen. */
export interface RecordingView {
  id: string
  serviceCode: string
  fileName: string
  taskId: string | null
  userName: string | null
  playUrl: string | null
  description: string | null
  location: string | null
  duration: number | null
  width: number | null
  height: number | null
  views: number | null
  likes: number | null
  createdAt: Date | null
  outputIndex: number | null
  tag: string | null
  path: string | null
  format: MediaFormatNode | null
  inputBytes: number | null
  httpOutputBytes: number | null
  receivedAt: Date | null
  firstSeenAt: Date
  seenIn: Array<'CALLBACK' | 'FILE_LIST'>
}

/** A recording's global id: of its service code and file name, never of a row id. */
export function recordingGlobalId(serviceCode: string, fileName: string): string {
  return toGlobalId('Recording', serviceCode, fileName)
}

/** A catalogue row as the GraphQL type reads it. */
export function recordingView(row: RecordingRow): RecordingView {
  const seenIn: RecordingView['seenIn'] = []
  if (row.fromCallback) seenIn.push('CALLBACK')
  if (row.fromList) seenIn.push('FILE_LIST')
  return {
    id: recordingGlobalId(row.serviceCode, row.fileName),
    serviceCode: row.serviceCode,
    fileName: row.fileName,
    taskId: row.taskId,
    userName: row.userName,
    playUrl: row.url,
    description: row.description,
    location: row.location,
    duration: row.duration,
    width: row.width,
    height: row.height,
    views: row.views,
    likes: row.likes,
    createdAt: row.recordedAt ?? row.liveStartedAt,
    outputIndex: row.outputIndex,
    tag: row.tag,
    path: row.path,
    format: row.format,
    inputBytes: row.inputBytes,
    httpOutputBytes: row.httpOutputBytes,
    receivedAt: row.receivedAt,
    firstSeenAt: row.firstSeenAt,
    seenIn,
  }
}

/** A recording's place in the newest-first order of `recordings`. */
export const recordingCursor: CursorCodec<RecordingKey> = timeIdCursor('r1')
