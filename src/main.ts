#!/usr/bin/env node
import { runCli } from './adapters/cli/cli.run.js'

// The only place that reads process.env and argv; everything below is handed what it needs.
const stopSignal = new Promise<string>((resolve) => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => resolve(signal))
})

runCli(process.argv.slice(2), {
  env: process.env,
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  stopSignal,
}).then(
  (code) => {
    process.exitCode = code
  },
  (error: unknown) => {
    process.stderr.write(`livegate: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exitCode = 1
  },
)
