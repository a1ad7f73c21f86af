import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Config, MEMORY_DATA_DIR } from '../../../config/config.schema.js'

/** Where the spool lives, and whether it is a scratch directory of this process alone. */
export interface SpoolLocation {
  dir: string
  /** A per-process directory under the OS temp dir: removed at close when empty. */
  scratch: boolean
}

/**
 * The spool directory: `spool.dir`, else `<database.dataDir>/spool`. An in-memory database keeps
 * nothing across a restart, so neither need its spool: it gets a per-process temp directory.
 */
export function spoolLocation(config: Pick<Config, 'spool' | 'database'>): SpoolLocation {
  if (config.spool.dir) return { dir: config.spool.dir, scratch: false }
  if (config.database.dataDir === MEMORY_DATA_DIR)
    return { dir: join(tmpdir(), `livegate-spool-${process.pid}`), scratch: true }
  return { dir: join(config.database.dataDir, 'spool'), scratch: false }
}

/**
 * A segment's name says which spool wrote it: `spool-<pid>-<token>-<seq>.jsonl`. Several gateways
 * may share a directory (two instances in one working directory, tests in one process); each
 * writes only its own segments, and adopts another's only once that one is gone.
 */
const SEGMENT_NAME = /^spool-(\d+)-([0-9a-z]+)-(\d{10})\.jsonl$/

// Spools open in this process: their pid is alive, yet a closed one's segments are free to adopt.
const openTokens = new Set<string>()

/** The identity of one open spool. */
export interface SpoolOwner {
  pid: number
  token: string
}

/** A fresh identity; its token sorts by start time, so older owners' segments sort first. */
export function claimOwner(): SpoolOwner {
  const token = `${Date.now().toString(36).padStart(9, '0')}${randomBytes(3).toString('hex')}`
  openTokens.add(token)
  return { pid: process.pid, token }
}

/** Gives an identity up: its remaining segments become adoptable by the next spool opened here. */
export function releaseOwner(owner: SpoolOwner): void {
  openTokens.delete(owner.token)
}

/** The name of one of `owner`'s segments. */
export function segmentName(owner: SpoolOwner, seq: number): string {
  return `spool-${owner.pid}-${owner.token}-${String(seq).padStart(10, '0')}.jsonl`
}

/** Where callbacks that no retry could keep are set aside for an operator. */
export function rejectedName(owner: SpoolOwner): string {
  return `rejected-${owner.pid}-${owner.token}.jsonl`
}

/**
 * The segments in a directory listing that no live spool owns, oldest owner first and in each
 * owner's own order. A pid that is alive but reused by another program keeps its segments
 * waiting until that program ends; the spool directory must be local to this host.
 */
export function orphanSegments(names: readonly string[]): string[] {
  const orphans: Array<{ name: string; token: string; seq: string }> = []
  for (const name of names) {
    const match = SEGMENT_NAME.exec(name)
    if (!match) continue
    const [, pid, token, seq] = match as unknown as [string, string, string, string]
    if (openTokens.has(token) || isAlive(Number(pid))) continue
    orphans.push({ name, token, seq })
  }
  return orphans
    .sort((a, b) => (a.token === b.token ? a.seq.localeCompare(b.seq) : a.token.localeCompare(b.token)))
    .map((o) => o.name)
}

function isAlive(pid: number): boolean {
  // This process's own pid: only an open spool (checked above) owns segments under it.
  if (pid === process.pid) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
