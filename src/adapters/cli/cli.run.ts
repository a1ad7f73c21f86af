import { parseArgs } from 'node:util'
import { type Config, ConfigError, loadConfig } from '../../config/index.js'

/** What a command may touch of the outside world; main.ts hands in the real ones. */
export interface CliIo {
  env: Record<string, string | undefined>
  out: (line: string) => void
  err: (line: string) => void
  /** Resolves when the process is asked to stop (SIGINT, SIGTERM). */
  stopSignal: Promise<string>
}

/** A command: its remaining arguments and the loaded configuration, to an exit code. */
export type Command = (args: string[], config: Config, io: CliIo) => Promise<number>

// Each command is loaded only when run: `serve` need not load the simulator, nor `sign` the
// GraphQL schema, which keeps start-up time and idle memory down.
const COMMANDS: Record<string, { load: () => Promise<Command>; summary: string }> = {
  serve: { load: async () => (await import('./serve.command.js')).serveCommand, summary: 'start the gateway (migrates the database first)' },
  migrate: { load: async () => (await import('./migrate.command.js')).migrateCommand, summary: 'apply the database migrations and exit' },
  demo: { load: async () => (await import('./demo.command.js')).demoCommand, summary: 'the gateway on an in-memory database, fed by the simulator: a first look' },
  schema: { load: async () => (await import('./schema.command.js')).schemaCommand, summary: 'print the GraphQL schema (SDL) the gateway serves' },
  sign: { load: async () => (await import('./sign.command.js')).signCommand, summary: 'print a signed curl line for a test callback: sign type=0 hashed_id=… ' },
  simulate: {
    load: async () => (await import('./simulate.command.js')).simulateCommand,
    summary: 'play the cloud: serve task_list, send a seeded scenario of signed callbacks (--gateway URL)',
  },
}

const USAGE = [
  'usage: livegate <command> [--config file.json] [options]',
  '',
  ...Object.entries(COMMANDS).map(([name, { summary }]) => `  ${name.padEnd(8)} ${summary}`),
  '',
  'The config file may also be named by LIVEGATE_CONFIG. PORT, HOST, DATABASE_URL,',
  'LIVEGATE_DATA_DIR and LOG_LEVEL override the file.',
].join('\n')

/** Runs the livegate command line; resolves to the process exit code. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
    strict: false,
  })
  const [name, ...rest] = positionals
  const command = name ? COMMANDS[name] : undefined
  if (values.help || !command) {
    ;(command || values.help ? io.out : io.err)(USAGE)
    return values.help ? 0 : 2
  }
  let config: Config
  try {
    const file = typeof values.config === 'string' ? values.config : io.env.LIVEGATE_CONFIG
    config = loadConfig({ ...(file ? { file } : {}), env: io.env })
  } catch (error) {
    if (error instanceof ConfigError) {
      io.err(`livegate: ${error.message}`)
      return 1
    }
    throw error
  }
  try {
    const run = await command.load()
    return await run(withoutGlobalOptions(argv, name as string), config, io)
  } catch (error) {
    // A configuration a command cannot work with (such as an unsafe binding) is one clear line.
    if (!(error instanceof ConfigError)) throw error
    io.err(`livegate: ${error.message}`)
    return 1
  }
}

function withoutGlobalOptions(argv: string[], name: string): string[] {
  const rest: string[] = []
  let seenName = false
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string
    if (arg === '--config' || arg === '-c') i++
    else if (arg.startsWith('--config=')) continue
    else if (!seenName && arg === name) seenName = true
    else rest.push(arg)
  }
  return rest
}
