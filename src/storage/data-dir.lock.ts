import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { join, resolve } from 'node:path'
import { StartupError } from '../config/startup.error.js'

/** The lock's file name inside the data directory. */
export const LOCK_FILE = 'livegate.lock'

// A takeover marker older than this was left by a process that died while taking over.
const TAKEOVER_STALE_MS = 10_000
// A lock file is created empty and written a moment later; an empty one this old is debris.
const EMPTY_STALE_MS = 5_000

// Locks this process holds: our pid in a lock we hold is alive; in one we do not, a previous life.
const heldHere = new Set<string>()

/** What the lock file holds: who owns the directory. */
export interface LockHolder {
  pid: number
  host: string
  command: string
  since: string
  token: string
}

/** A held lock: release it when the database is closed (process exit releases it too). */
export interface DataDirLock {
  path: string
  release(): void
}

/**
 * Takes the data directory for this process alone: one PGlite (serve, demo or migrate) per
 * directory, since two would corrupt it. The lock is `livegate.lock`, a JSON line naming the
 * holder's pid, host and command. A lock whose process is gone (same host, pid not alive) is taken
 * over; a takeover is itself exclusive (`livegate.lock.takeover`), so two starters never both win.
 */
export function lockDataDir(dataDir: string, command: string): DataDirLock {
  const dir = resolve(dataDir)
  mkdirSync(dir, { recursive: true })
  const path = join(dir, LOCK_FILE)
  const mine: LockHolder = {
    pid: process.pid,
    host: hostname(),
    command,
    since: new Date().toISOString(),
    token: randomBytes(8).toString('hex'),
  }
  const text = `${JSON.stringify(mine)}\n`
  if (!createExclusive(path, text)) takeOver(dir, path, text)
  heldHere.add(path)
  let held = true
  const release = () => {
    if (!held) return
    held = false
    heldHere.delete(path)
    process.off('exit', release)
    // Only our own lock: a lock file someone replaced by hand is not ours to remove.
    const holder = readHolder(path)
    if (typeof holder === 'object' && holder.token === mine.token) unlinkQuietly(path)
  }
  process.on('exit', release)
  return { path, release }
}

function takeOver(dir: string, path: string, text: string): void {
  const holder = readHolder(path)
  if (holder === 'missing') {
    if (createExclusive(path, text)) return
    return takeOver(dir, path, text)
  }
  if (holder !== undefined && holder !== 'empty' && isAlive(holder, path)) throw lockedError(dir, holder)
  if (holder === 'empty' && ageMs(path) < EMPTY_STALE_MS)
    throw new StartupError(`data directory ${dir} is being locked by another process right now; try again in a moment`)
  const marker = `${path}.takeover`
  if (!createExclusive(marker, `${process.pid}\n`)) {
    if (ageMs(marker) < TAKEOVER_STALE_MS)
      throw new StartupError(
        `data directory ${dir} is being taken over by another process right now; try again in a moment`,
      )
    unlinkQuietly(marker)
    if (!createExclusive(marker, `${process.pid}\n`))
      throw new StartupError(
        `data directory ${dir} is being taken over by another process right now; try again in a moment`,
      )
  }
  try {
    // Under the marker nobody else replaces the lock: what we judged stale is what we remove.
    const again = readHolder(path)
    if (again !== 'missing' && JSON.stringify(again) !== JSON.stringify(holder)) {
      if (again !== undefined && again !== 'empty' && isAlive(again, path)) throw lockedError(dir, again)
    }
    unlinkQuietly(path)
    if (!createExclusive(path, text)) {
      const winner = readHolder(path)
      throw winner !== undefined && winner !== 'empty' && winner !== 'missing'
        ? lockedError(dir, winner)
        : new StartupError(`data directory ${dir}: cannot create ${LOCK_FILE}`)
    }
  } finally {
    unlinkQuietly(marker)
  }
}

function lockedError(dir: string, holder: LockHolder): StartupError {
  const elsewhere =
    holder.host !== hostname()
      ? ` on host ${holder.host} (delete ${join(dir, LOCK_FILE)} if that process is surely gone)`
      : ''
  return new StartupError(
    `data directory ${dir} is in use by livegate ${holder.command} ` +
      `(pid ${holder.pid}${elsewhere}, since ${holder.since}): ` +
      'stop it first, or give this process another database.dataDir (LIVEGATE_DATA_DIR)',
  )
}

// Another host's process cannot be checked from here, so it counts as alive.
function isAlive(holder: LockHolder, path: string): boolean {
  if (holder.host !== hostname()) return true
  // Our own pid in a lock we do not hold is a previous life of this pid (a container's pid 1).
  if (holder.pid === process.pid) return heldHere.has(path)
  try {
    process.kill(holder.pid, 0)
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
  return !isZombie(holder.pid)
}

// A process killed but not yet reaped still answers signal 0, and in a container whose first
// process reaps nothing it stays so: its state in /proc says it is gone (Linux only; elsewhere
// it counts as alive).
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
    return state === 'Z' || state === 'X'
  } catch {
    return false
  }
}

function readHolder(path: string): LockHolder | 'missing' | 'empty' | undefined {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'missing'
    throw new StartupError(`cannot read the lock ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  if (text.trim() === '') return 'empty'
  try {
    const value = JSON.parse(text) as Partial<LockHolder>
    if (typeof value.pid === 'number' && typeof value.host === 'string') {
      return {
        pid: value.pid,
        host: value.host,
        command: String(value.command ?? '?'),
        since: String(value.since ?? '?'),
        token: String(value.token ?? ''),
      }
    }
  } catch {
    // Not ours to read: treated as stale, like a lock of a dead process.
  }
  return undefined
}

function createExclusive(path: string, text: string): boolean {
  try {
    writeFileSync(path, text, { flag: 'wx' })
    return true
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'EEXIST') return false
    throw new StartupError(`cannot create ${path} (${code ?? 'error'}): is the data directory writable?`)
  }
}

function ageMs(path: string): number {
  try {
    return Date.now() - statSync(path).mtimeMs
  } catch {
    return Number.POSITIVE_INFINITY
  }
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path)
  } catch {
    // Already gone.
  }
}
