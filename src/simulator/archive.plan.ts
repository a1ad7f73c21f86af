import type { Scenario, ScenarioCallback } from './scenario.model.js'

/**
 * The simulated cloud's archive (operations.md, `list_files`): every task that ends with
 * `live_only` 0 is recorded, and its file is listed from the moment its type 2 callback is due.
 * With mishaps, the cloud also forgets some type 2 callbacks of files it did archive (`SILENT`),
 * and archives nothing for some tasks (`LOST`: no file, no callback). A task's fate follows from
 * its id alone, so the same scenario always has the same ground truth, and the scenario's own
 * random draws (its task ids, its events) are not disturbed.
 */
export type ArchiveFate = 'ANNOUNCED' | 'SILENT' | 'LOST'

/** A file of the archive, with the truth of how the cloud treats it. */
export interface ArchivedFile {
  serviceCode: string
  taskId: string
  fate: ArchiveFate
  /** When it is listed, from the scenario's start (its type 2 callback's time). */
  listedFromMs: number
  fileName: string
  /** Unix seconds: when the recording was finished. */
  createdAt: number
  duration: string
  width: number
  height: number
  userName: string
  description: string
  url: string
  location: string
}

/** The archive of one scenario, and the callbacks the cloud actually sends. */
export interface ArchivePlan {
  /** Every file archived, oldest first; `LOST` tasks have none. */
  files: ArchivedFile[]
  /** The tasks that should have been archived and were not. */
  lost: Array<{ serviceCode: string; taskId: string }>
  /** The scenario's callbacks without the type 2 of `SILENT` and `LOST` tasks. */
  callbacks: ScenarioCallback[]
}

/** A task's fate with mishaps: about one in six forgotten, one in eight lost; without, all announced. */
export function archiveFate(taskId: string, mishaps: boolean): ArchiveFate {
  if (!mishaps) return 'ANNOUNCED'
  const h = hash(taskId) % 24
  return h < 4 ? 'SILENT' : h < 7 ? 'LOST' : 'ANNOUNCED'
}

/** The archive a scenario leaves; see {@link ArchiveFate}. */
export function planArchive(scenario: Scenario, mishaps: boolean): ArchivePlan {
  const files: ArchivedFile[] = []
  const lost: ArchivePlan['lost'] = []
  const callbacks: ScenarioCallback[] = []
  for (const callback of scenario.callbacks) {
    if (callback.type !== 2) {
      callbacks.push(callback)
      continue
    }
    const fate = archiveFate(callback.taskId, mishaps)
    if (fate === 'ANNOUNCED') callbacks.push(callback)
    if (fate === 'LOST') {
      lost.push({ serviceCode: callback.serviceCode, taskId: callback.taskId })
      continue
    }
    const f = callback.fields
    const [width, height] = (f.size ?? '0x0').split('x').map(Number)
    files.push({
      serviceCode: callback.serviceCode,
      taskId: callback.taskId,
      fate,
      listedFromMs: callback.atMs,
      fileName: f.file_name ?? `${callback.taskId}.mp4`,
      createdAt: Math.floor((scenario.epochMs + callback.atMs) / 1000),
      duration: f.duration ?? '0',
      width: width ?? 0,
      height: height ?? 0,
      userName: f.author ?? '',
      description: hash(callback.taskId) % 3 === 0 ? 'highlights' : '',
      url: f.url ?? '',
      location: '',
    })
  }
  return { files, lost, callbacks }
}

/** How often a file has been watched and liked `sinceMs` after it was listed: steps every 5 s. */
export function countsOf(file: ArchivedFile, sinceMs: number): { views: number; likes: number } {
  const steps = Math.max(0, Math.floor(sinceMs / 5000))
  const pace = 1 + (hash(file.fileName) % 4)
  return { views: steps * pace, likes: Math.floor((steps * pace) / 4) }
}

// FNV-1a: small, stable across machines, and independent of the scenario's random stream.
function hash(text: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h
}
