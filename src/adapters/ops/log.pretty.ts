import type { DestinationStream } from 'pino'

const LEVELS: Readonly<Record<number, string>> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO ', 40: 'WARN ', 50: 'ERROR', 60: 'FATAL' }
const COLOURS: Readonly<Record<number, string>> = { 10: '90', 20: '90', 30: '32', 40: '33', 50: '31', 60: '35' }
// Fields every line has, or that the line's head already shows.
const HIDDEN = new Set(['level', 'time', 'pid', 'hostname', 'msg', 'err', 'reqId'])

/**
 * A destination that writes each pino line as one a person reads: time, level, message, then the
 * other fields as `key=value`, and an error's stack below. For a terminal; a file or a collector
 * gets the JSON lines as they are. Lines arrive already scrubbed of secrets (the logger's
 * `streamWrite` hook runs first).
 */
export function prettyDestination(write: (text: string) => void, colour: boolean): DestinationStream {
  return {
    write(line: string) {
      write(prettyLine(line, colour))
    },
  }
}

/** One JSON log line in words; a line that is not JSON passes unchanged. */
export function prettyLine(line: string, colour: boolean): string {
  let entry: Record<string, unknown>
  try {
    entry = JSON.parse(line) as Record<string, unknown>
  } catch {
    return line.endsWith('\n') ? line : `${line}\n`
  }
  const level = typeof entry.level === 'number' ? entry.level : 30
  const time = typeof entry.time === 'number' ? new Date(entry.time).toISOString().slice(11, 23) : ''
  const name = LEVELS[level] ?? String(level)
  const head = colour ? `\u001b[${COLOURS[level] ?? '0'}m${name}\u001b[0m` : name
  const fields = Object.entries(entry)
    .filter(([key]) => !HIDDEN.has(key))
    .map(([key, value]) => `${key}=${shown(value)}`)
  const err = entry.err as { type?: string; message?: string; stack?: string } | undefined
  const parts = [time, head, typeof entry.msg === 'string' ? entry.msg : '', ...fields]
  let text = parts.filter((part) => part !== '').join(' ')
  if (err) text += level >= 50 && err.stack ? `\n    ${err.stack.replaceAll('\n', '\n    ')}` : ` err=${shown(`${err.type ?? 'Error'}: ${err.message ?? ''}`)}`
  return `${text}\n`
}

function shown(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value)
  if (typeof value === 'object' && value !== null) return JSON.stringify(value)
  return String(value)
}
