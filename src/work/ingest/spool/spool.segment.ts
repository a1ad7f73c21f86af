import { type FileHandle, open, readFile, truncate } from 'node:fs/promises'
import type { CallbackRecord } from '../../../model/callback.record.js'
import { decodeSpoolEntry } from './spool.codec.js'

const NEWLINE = 0x0a

/**
 * The one segment a spool appends to. Each batch is written at the end of what is known good and
 * made durable with fdatasync before any of its callbacks is answered; a failed write is cut off
 * again, so a later batch never lands behind half a line.
 */
export class SegmentWriter {
  /** Bytes known to be written and synced. */
  size = 0
  /** Entries in those bytes. */
  entries = 0
  /** Set after a failed write: nothing more may be appended here. */
  broken = false

  private constructor(
    readonly path: string,
    private readonly handle: FileHandle,
  ) {}

  /** Creates the segment file (never an existing one) and makes its name durable. */
  static async create(dir: string, path: string): Promise<SegmentWriter> {
    const handle = await open(path, 'wx', 0o600)
    try {
      await syncDirectory(dir)
    } catch (error) {
      await handle.close()
      throw error
    }
    return new SegmentWriter(path, handle)
  }

  /** Appends whole lines holding `count` entries; resolves once they are on disk. */
  async append(lines: Buffer, count: number): Promise<void> {
    if (this.broken) throw new Error(`spool segment ${this.path} is broken`)
    try {
      let written = 0
      while (written < lines.length) {
        const { bytesWritten } = await this.handle.write(lines, written, lines.length - written, this.size + written)
        written += bytesWritten
      }
      await this.handle.datasync()
    } catch (error) {
      // After a failed write or sync the file's tail cannot be trusted (a failed fsync may have
      // dropped pages): cut it back to what was synced and start the next batch in a new segment.
      this.broken = true
      await this.handle.truncate(this.size).catch(() => {})
      throw error
    }
    this.size += lines.length
    this.entries += count
  }

  async close(): Promise<void> {
    await this.handle.close()
  }
}

/** What a segment file holds. */
export interface SegmentContent {
  rows: CallbackRecord[]
  /** Complete lines that are not entries (damage); they are set aside, never replayed. */
  damaged: string[]
  /** Bytes up to the end of the last complete line. */
  wholeBytes: number
  /** Bytes in the file. */
  fileBytes: number
}

/**
 * Reads a segment in order. A last line without its newline is a write a crash cut short: it was
 * never acknowledged, so it is left out (and {@link repairSegment} cuts it off).
 */
export async function readSegment(path: string): Promise<SegmentContent> {
  const data = await readFile(path)
  const end = data.lastIndexOf(NEWLINE) + 1
  const rows: CallbackRecord[] = []
  const damaged: string[] = []
  let start = 0
  while (start < end) {
    const stop = data.indexOf(NEWLINE, start)
    const text = data.toString('utf8', start, stop)
    start = stop + 1
    if (text.length === 0) continue
    const row = decodeSpoolEntry(text)
    if (row) rows.push(row)
    else damaged.push(text)
  }
  return { rows, damaged, wholeBytes: end, fileBytes: data.length }
}

/** Cuts a torn last line off a segment that nobody appends to any more. */
export async function repairSegment(path: string, content: SegmentContent): Promise<void> {
  if (content.fileBytes === content.wholeBytes) return
  await truncate(path, content.wholeBytes)
}

/** Makes the creation, rename or removal of a file in `dir` durable. */
export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}
