import { type ChildProcess, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** A bench child process spoken to by request and answer over its IPC channel. */
export interface BenchChild {
  pid: number
  /** Sends a command and resolves with the child's answer to it. */
  ask<T = unknown>(command: string, args?: unknown): Promise<T>
  /** Asks the child to stop, and waits for it to exit (killed after `graceMs`). */
  stop(graceMs?: number): Promise<void>
}

interface Answer {
  seq: number
  result?: unknown
  error?: string
}

/**
 * Starts `file` (a .ts next to this one) under tsx in its own process. The soft limit of open
 * files is raised to the hard limit inside the child's shell only: 5,000 sockets a process
 * need more than some defaults allow, and nothing system-wide changes.
 */
export function startChild(file: string, execArgv: string[] = []): BenchChild {
  const path = fileURLToPath(new URL(file, import.meta.url))
  const child: ChildProcess = spawn(
    'sh',
    [
      '-c',
      'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$0" "$@"',
      process.execPath,
      '--import',
      'tsx',
      ...execArgv,
      path,
      CHILD_FLAG,
    ],
    {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'advanced',
    },
  )
  let seq = 0
  const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>()
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.on('message', (message: Answer) => {
    const waiter = waiting.get(message.seq)
    if (!waiter) return
    waiting.delete(message.seq)
    if (message.error !== undefined) waiter.reject(new Error(message.error))
    else waiter.resolve(message.result)
  })
  child.once('exit', (code, signal) => {
    for (const waiter of waiting.values())
      waiter.reject(new Error(`${file} exited (${code ?? signal}) before answering`))
    waiting.clear()
  })
  return {
    pid: child.pid as number,
    ask<T>(command: string, args?: unknown): Promise<T> {
      const id = ++seq
      return new Promise<T>((resolve, reject) => {
        waiting.set(id, { resolve: resolve as (value: unknown) => void, reject })
        child.send({ seq: id, command, args })
      })
    },
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.send({ seq: 0, command: 'stop' })
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
      await exited
      clearTimeout(timer)
    },
  }
}

const CHILD_FLAG = '--fanout-bench-child'

/** Whether this process was started by {@link startChild} to run the module at `moduleUrl`. */
export function isBenchChild(moduleUrl: string): boolean {
  return process.argv.includes(CHILD_FLAG) && process.argv[1] === fileURLToPath(moduleUrl) && process.send !== undefined
}

/** The child's side: answers each command with `handle`, exits after `stop`. */
export function serveCommands(
  handle: (command: string, args: unknown) => unknown | Promise<unknown>,
  onStop: () => Promise<void>,
): void {
  process.on('message', async (message: { seq: number; command: string; args?: unknown }) => {
    if (message.command === 'stop') {
      await onStop()
      // Exiting (not being killed) lets --cpu-prof write its profile.
      process.exit(0)
    }
    try {
      const result = await handle(message.command, message.args)
      process.send?.({ seq: message.seq, result })
    } catch (error) {
      process.send?.({ seq: message.seq, error: error instanceof Error ? error.message : String(error) })
    }
  })
}

/** The peak and current resident set of a process, in bytes, from /proc. */
export function residentSet(pid: number | 'self' = 'self'): { peak: number; current: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024
  return { peak: kb('VmHWM'), current: kb('VmRSS') }
}

/** Opens sockets `0 … count - 1` with `open`, at most `atOnce` handshakes in flight (a client's own pace). */
export async function openInWaves(
  count: number,
  atOnce: number,
  open: (index: number) => Promise<void>,
): Promise<void> {
  let next = 0
  const worker = async () => {
    while (next < count) await open(next++)
  }
  await Promise.all(Array.from({ length: atOnce }, worker))
}
