import type { DestinationStream } from 'pino'
import { prettyFactory } from 'pino-pretty'

/**
 * A destination that writes each pino line as a person reads it, formatted by pino-pretty (the
 * pino project's own formatter): time, level, message and the other fields on one line, an error's
 * stack below it. For a terminal; a file or a collector gets the JSON lines as they are.
 * Lines arrive already scrubbed of secrets (the logger's `streamWrite` hook runs first), and the
 * formatter runs in this thread: a transport thread would outlive a worker's exit and lose the
 * lines a failing start writes last.
 */
export function prettyDestination(write: (text: string) => void, colour: boolean): DestinationStream {
  const pretty = prettyLineOf(colour)
  return {
    write(line: string) {
      write(pretty(line))
    },
  }
}

/** The formatter of {@link prettyDestination}: one JSON log line in words; a line that is not JSON passes unchanged. */
export function prettyLineOf(colour: boolean): (line: string) => string {
  const format = prettyFactory({
    colorize: colour,
    // The clock of the machine, to the millisecond: lines are read beside other local logs.
    translateTime: 'SYS:HH:MM:ss.l',
    // Every line has them; a worker of `serve --workers N` is named by its `worker` field instead.
    ignore: 'pid,hostname',
    // A callback or a request is one line; an error still shows its stack below it.
    singleLine: true,
  })
  return (line) => {
    const text = format(line)
    return text.endsWith('\n') ? text : `${text}\n`
  }
}
