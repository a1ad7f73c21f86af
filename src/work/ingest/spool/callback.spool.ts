import { appendFile, mkdir, readdir, rename, rmdir, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import type { CallbackRecord } from '../../../model/callback.record.js'
import { encodeSpoolEntry } from './spool.codec.js'
import { claimOwner, orphanSegments, rejectedName, releaseOwner, segmentName, type SpoolOwner } from './spool.owner.js'
import { readSegment, repairSegment, type SegmentContent, SegmentWriter, syncDirectory } from './spool.segment.js'

/** What a spool is opened with. */
export interface SpoolOptions {
  dir: string
  /** Bytes the spool may hold; 0 refuses every append. */
  maxBytes: number
  /** A scratch directory of this process: removed at close when empty. */
  scratch?: boolean
  /** A segment is sealed once it holds this many bytes, so the replayer reads bounded files. */
  segmentBytes?: number
  /** Told the number of entries waiting whenever it changes (the spool depth gauge). */
  onDepth?: (depth: number) => void
}

/** A segment no longer appended to, waiting to be replayed. */
export interface SealedSegment {
  readonly path: string
  entries: number
  bytes: number
  /** Entries at its start already kept (in memory only: after a crash they are kept again, harmlessly). */
  replayed: number
}

/** Refused because the spool holds `maxBytes` already. */
export class SpoolFullError extends Error {
  override name = 'SpoolFullError'
}

interface Pending {
  line: Buffer
  resolve: () => void
  reject: (error: unknown) => void
}

const GROUP_BYTES = 1024 * 1024

/**
 * The local spool: callbacks the database could not take, appended in arrival order to JSONL
 * segments and synced before {@link append} resolves. Every file operation runs on one queue;
 * appends that wait while a write is syncing are written and synced together (group commit).
 */
export class CallbackSpool {
  /** Writes made durable so far; fewer than appends when appends queued up behind a sync. */
  syncs = 0
  private readonly owner: SpoolOwner = claimOwner()
  private readonly sealed: SealedSegment[] = []
  private readonly pending: Pending[] = []
  private readonly listeners: Array<() => void> = []
  private readonly damageSetAside = new WeakSet<SealedSegment>()
  private active: SegmentWriter | undefined
  private nextSeq = 1
  private waiting = 0
  private heldBytes = 0
  private pendingBytes = 0
  private flushQueued = false
  private closed = false
  private queue: Promise<unknown> = Promise.resolve()

  private constructor(private readonly options: SpoolOptions) {}

  /** Opens the spool and adopts what an ended run left in its directory. */
  static async open(options: SpoolOptions): Promise<CallbackSpool> {
    const spool = new CallbackSpool(options)
    await spool.adoptOrphans()
    return spool
  }

  /** The directory the spool writes to. */
  get dir(): string {
    return this.options.dir
  }

  /** Entries waiting to be kept in the database. */
  depth(): number {
    return this.waiting
  }

  /** Calls `listener` after every durable append (the replayer's wake-up). */
  onAppend(listener: () => void): void {
    this.listeners.push(listener)
  }

  /** Appends a callback; resolves only once it is on disk. Rejects when full, closed or unwritable. */
  append(row: CallbackRecord): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the spool is closed'))
    const line = Buffer.from(`${encodeSpoolEntry(row)}\n`, 'utf8')
    if (this.heldBytes + this.pendingBytes + line.length > this.options.maxBytes) {
      return Promise.reject(
        new SpoolFullError(`the spool holds ${this.heldBytes} bytes of its ${this.options.maxBytes}`),
      )
    }
    this.pendingBytes += line.length
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ line, resolve, reject })
      if (!this.flushQueued) {
        this.flushQueued = true
        void this.enqueue(() => this.flush())
      }
    })
  }

  /** The sealed segments, oldest first: the replayer's work. */
  segments(): readonly SealedSegment[] {
    return this.sealed
  }

  /** Seals the segment being appended to, if it holds anything, so it can be replayed. */
  seal(): Promise<void> {
    return this.enqueue(() => this.sealActive())
  }

  /** The rows of a sealed segment in order; damaged lines are set aside, once. */
  async read(segment: SealedSegment): Promise<CallbackRecord[]> {
    const content = await readSegment(segment.path).catch((error: NodeJS.ErrnoException) => {
      // Removed by hand: there is nothing left to replay from it.
      if (error.code === 'ENOENT') return { rows: [], damaged: [], wholeBytes: 0, fileBytes: 0 }
      throw error
    })
    if (content.damaged.length > 0 && !this.damageSetAside.has(segment)) {
      await this.setAside(content.damaged.map((line) => JSON.stringify({ damaged: line })))
      this.damageSetAside.add(segment)
    }
    return content.rows
  }

  /** Counts one entry of `segment` as kept in the database. */
  kept(segment: SealedSegment): void {
    segment.replayed += 1
    this.setDepth(this.waiting - 1)
  }

  /** Removes a fully replayed segment. */
  async remove(segment: SealedSegment): Promise<void> {
    await unlink(segment.path).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error
    })
    await syncDirectory(this.options.dir).catch(() => {})
    this.sealed.splice(this.sealed.indexOf(segment), 1)
    this.heldBytes -= segment.bytes
    this.setDepth(this.waiting - (segment.entries - segment.replayed))
  }

  /** Sets a callback no retry could keep aside, for an operator; it leaves the queue. */
  async setAsideEntry(segment: SealedSegment, row: CallbackRecord, reason: string): Promise<void> {
    await this.setAside([JSON.stringify({ reason, entry: JSON.parse(encodeSpoolEntry(row)) as unknown })])
    this.kept(segment)
  }

  /**
   * Takes over the segments of spools that are gone (a previous run, a crashed sibling): each is
   * renamed into this spool's names, so two live spools never replay the same one.
   */
  async adoptOrphans(): Promise<number> {
    let names: string[]
    try {
      names = await readdir(this.options.dir)
    } catch {
      return 0
    }
    let adopted = 0
    for (const name of orphanSegments(names)) {
      const path = join(this.options.dir, segmentName(this.owner, this.nextSeq))
      try {
        await rename(join(this.options.dir, name), path)
      } catch {
        continue
      }
      this.nextSeq += 1
      let content: SegmentContent
      try {
        content = await readSegment(path)
        await repairSegment(path, content)
      } catch {
        // Unreadable now: it keeps this spool's name, so the next run adopts it again.
        continue
      }
      this.sealed.push({ path, entries: content.rows.length, bytes: content.wholeBytes, replayed: 0 })
      this.heldBytes += content.wholeBytes
      this.setDepth(this.waiting + content.rows.length)
      adopted += 1
    }
    if (adopted > 0) await syncDirectory(this.options.dir).catch(() => {})
    return adopted
  }

  /** Syncs what is queued, then stops; segments still holding entries stay for the next run. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.enqueue(async () => {
      const active = this.active
      this.active = undefined
      if (active) {
        await active.close().catch(() => {})
        if (active.entries === 0) await unlink(active.path).catch(() => {})
      }
    })
    releaseOwner(this.owner)
    if (this.options.scratch && this.waiting === 0) await rmdir(this.options.dir).catch(() => {})
  }

  private enqueue<T>(operation: () => Promise<T>): Promise<T> {
    const result = this.queue.then(operation)
    this.queue = result.catch(() => {})
    return result
  }

  private async flush(): Promise<void> {
    this.flushQueued = false
    while (this.pending.length > 0) {
      let bytes = 0
      let count = 0
      while (
        count < this.pending.length &&
        (count === 0 || bytes + (this.pending[count] as Pending).line.length <= GROUP_BYTES)
      ) {
        bytes += (this.pending[count] as Pending).line.length
        count += 1
      }
      const batch = this.pending.splice(0, count)
      this.pendingBytes -= bytes
      try {
        await this.write(
          Buffer.concat(
            batch.map((item) => item.line),
            bytes,
          ),
          batch.length,
        )
      } catch (error) {
        for (const item of batch) item.reject(error)
        continue
      }
      this.syncs += 1
      this.heldBytes += bytes
      this.setDepth(this.waiting + batch.length)
      for (const item of batch) item.resolve()
      for (const listener of this.listeners) listener()
    }
  }

  private async write(lines: Buffer, count: number): Promise<void> {
    const limit = this.options.segmentBytes ?? 4 * 1024 * 1024
    if (this.active && (this.active.broken || (this.active.size > 0 && this.active.size + lines.length > limit))) {
      await this.sealActive()
    }
    if (!this.active) {
      await mkdir(this.options.dir, { recursive: true })
      this.active = await SegmentWriter.create(
        this.options.dir,
        join(this.options.dir, segmentName(this.owner, this.nextSeq)),
      )
      this.nextSeq += 1
    }
    await this.active.append(lines, count)
  }

  private async sealActive(): Promise<void> {
    const active = this.active
    if (!active || (active.entries === 0 && !active.broken)) return
    this.active = undefined
    await active.close().catch(() => {})
    if (active.entries === 0) {
      await unlink(active.path).catch(() => {})
      return
    }
    this.sealed.push({ path: active.path, entries: active.entries, bytes: active.size, replayed: 0 })
  }

  private async setAside(lines: string[]): Promise<void> {
    await appendFile(join(this.options.dir, rejectedName(this.owner)), lines.map((line) => `${line}\n`).join(''), {
      mode: 0o600,
      flush: true,
    })
  }

  private setDepth(depth: number): void {
    this.waiting = depth
    this.options.onDepth?.(depth)
  }
}
