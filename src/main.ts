#!/usr/bin/env node
import { runCli } from './adapters/cli/cli.run.js'
import { applyRuntimeSettings } from './adapters/cli/runtime.settings.js'

// Before anything allocates much: a V8 setting the gateway needs on Node 24 (runtime.settings.ts).
applyRuntimeSettings({ v8: process.versions.v8, execArgv: process.execArgv })

// The only place that reads process.env and argv; everything below is handed what it needs.
const stopSignal = new Promise<string>((resolve) => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => resolve(signal))
})

// LIVEGATE_JSON_TEXT=on|off overrides where a task page's parts are written as JSON text (by
// default where JSON.rawJSON exists): for measuring one path against the other, or a way back.
function jsonTextSwitch(value: string | undefined): { jsonText?: boolean } {
  if (value === 'on') return { jsonText: true }
  if (value === 'off') return { jsonText: false }
  return {}
}

runCli(process.argv.slice(2), {
  env: process.env,
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  stopSignal,
  tty: process.stdout.isTTY === true,
  // Loaded only by the commands that start a gateway: `sign` or `schema` need none of it.
  startGateway: async (config, options) =>
    (await import('./gateway.assembly.js')).startGateway(config, {
      ...options,
      ...jsonTextSwitch(process.env.LIVEGATE_JSON_TEXT),
    }),
  startWebhookWorker: async (config, options) =>
    (await import('./webhooks.assembly.js')).startWebhookWorker(config, options),
}).then(
  (code) => {
    // A command that failed has closed what it opened; exiting at once makes sure a timer or
    // socket left by a library cannot keep a failed process alive, unseen by its supervisor.
    if (code !== 0) process.exit(code)
    process.exitCode = code
  },
  (error: unknown) => {
    process.stderr.write(`livegate: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
    process.exit(1)
  },
)
