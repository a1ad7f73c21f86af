import { readFileSync } from 'node:fs'
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { ConfigError, loadConfig, settingOrigin, StartupError } from '../../config/index.js'
import { HELP, helpText, PORT_RULE } from './command.help.js'
import type { CliIo, Command } from './command.model.js'
import { npmSlip } from './npm.slip.js'

export type { CliIo, Command, CommandContext } from './command.model.js'

type Options = NonNullable<ParseArgsConfig['options']>

interface CommandEntry {
  load: () => Promise<Command>
  summary: string
  /** Its own options and arguments, after `livegate <name> [--config file.json]`. */
  synopsis: string
  options: Options
  positionals?: boolean
  /** Its `--port` is the gateway's (serve, demo), set by the one rule of precedence (PORT_RULE). */
  gatewayPort?: boolean
}

const text = { type: 'string' } as const
const flag = { type: 'boolean' } as const

// Each command is loaded only when run: `serve` need not load the simulator, nor `sign` the
// GraphQL schema, which keeps start-up time and idle memory down.
const COMMANDS: Record<string, CommandEntry> = {
  serve: {
    load: async () => (await import('./serve.command.js')).serveCommand,
    summary: 'start the gateway (migrates the database first)',
    synopsis: '[--port N] [--workers N]',
    options: { port: text, workers: text },
    gatewayPort: true,
  },
  migrate: {
    load: async () => (await import('./migrate.command.js')).migrateCommand,
    summary: 'apply the database migrations and exit',
    synopsis: '',
    options: {},
  },
  demo: {
    load: async () => (await import('./demo.command.js')).demoCommand,
    summary: 'the gateway on an in-memory database, fed by the simulator: a first look',
    synopsis: '[--port 4000] [--simulator-port 4100] [--profile day|burst] [--sessions 24] [--rate 4]',
    options: { port: text, 'simulator-port': text, rate: text, sessions: text, profile: text },
    gatewayPort: true,
  },
  schema: {
    load: async () => (await import('./schema.command.js')).schemaCommand,
    summary: "print the GraphQL schema (SDL) the gateway serves, or a client cache's possible types and keys",
    synopsis: '[sdl | possible-types]',
    options: {},
    positionals: true,
  },
  sign: {
    load: async () => (await import('./sign.command.js')).signCommand,
    summary: 'print a signed curl line for a test callback: sign type=0 hashed_id=… ',
    synopsis: '[--service CODE] [--url URL] [--get] name=value …',
    options: { service: text, url: text, get: flag },
    positionals: true,
  },
  simulate: {
    load: async () => (await import('./simulate.command.js')).simulateCommand,
    summary: 'play the cloud: serve task_list, send a seeded scenario of signed callbacks (--gateway URL)',
    synopsis:
      '[--gateway http://127.0.0.1:4000] [--port 4100] [--host 127.0.0.1] [--seed 1] [--sessions 5] [--rate 5] ' +
      '[--loop] [--archive-mishaps]',
    options: {
      gateway: text,
      port: text,
      host: text,
      seed: text,
      sessions: text,
      rate: text,
      loop: flag,
      'archive-mishaps': flag,
    },
  },
}

const GLOBAL: Options = { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' } }

const USAGE = [
  'usage: livegate <command> [--config file.json] [options]   (livegate <command> --help for its options)',
  '       livegate --version',
  '',
  ...Object.entries(COMMANDS).map(([name, { summary }]) => `  ${name.padEnd(8)} ${summary}`),
  '',
  'The config file may also be named by LIVEGATE_CONFIG. PORT, HOST, DATABASE_URL,',
  'LIVEGATE_DATA_DIR, LOG_LEVEL and LOG_FORMAT override the file.',
].join('\n')

const usageOf = (name: string, entry: CommandEntry) =>
  `usage: livegate ${name} [--config file.json]${entry.synopsis ? ` ${entry.synopsis}` : ''}\n  ${entry.summary}`

/** The long help of `livegate <name> --help`. */
function longHelp(name: string, entry: CommandEntry): string {
  const help = HELP[name]
  return help ? helpText(usageOf(name, entry), help, entry.gatewayPort ? PORT_RULE : undefined) : usageOf(name, entry)
}

/** livegate's version, from the package.json beside `src/` or `dist/` (in a checkout and installed alike). */
function version(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
    version: string
  }
  return manifest.version
}

/** `--port N` as a port number, or the line that says why not. */
function portOf(value: string): number | string {
  const port = Number(value)
  return /^\d{1,5}$/.test(value) && port <= 65_535 ? port : `--port: "${value}" is not a port number from 0 to 65535`
}

/** Runs the livegate command line; resolves to the process exit code. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const name = argv.find((arg, index) => !arg.startsWith('-') && !['--config', '-c'].includes(argv[index - 1] ?? ''))
  const entry = name !== undefined && Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined
  if (!entry) {
    if (name === undefined && argv.some((arg) => arg === '--version' || arg === '-v')) {
      io.out(`livegate ${version()}`)
      return 0
    }
    if (name === undefined && argv.some((arg) => arg === '--help' || arg === '-h')) {
      io.out(USAGE)
      return 0
    }
    io.err(name === undefined ? USAGE : `livegate: unknown command "${name}"\n${USAGE}`)
    return 2
  }
  const commandName = name as string
  const slip = npmSlip(
    io.env,
    Object.keys({ ...GLOBAL, ...entry.options }),
    argv.filter((arg) => arg !== commandName),
  )
  if (slip) {
    io.err(`livegate: ${slip}`)
    return 2
  }
  let values: Record<string, unknown>
  try {
    values = parseArgs({
      args: argv,
      options: { ...GLOBAL, ...entry.options },
      allowPositionals: true,
      strict: true,
    }).values
    const extra = positionalsOf(argv, entry).filter((arg, index) => !(index === 0 && arg === commandName))
    if (!entry.positionals && extra.length > 0) throw new Error(`unexpected argument "${extra[0]}"`)
  } catch (error) {
    io.err(`livegate ${commandName}: ${plainParseError(error)}\n${usageOf(commandName, entry)}`)
    return 2
  }
  if (values.help) {
    io.out(longHelp(commandName, entry))
    return 0
  }
  const port = entry.gatewayPort && typeof values.port === 'string' ? portOf(values.port) : undefined
  if (typeof port === 'string') {
    io.err(`livegate ${commandName}: ${port}\n${usageOf(commandName, entry)}`)
    return 2
  }
  const file = typeof values.config === 'string' ? values.config : io.env.LIVEGATE_CONFIG
  const sources = { ...(file ? { file } : {}), env: io.env }
  try {
    const loaded = loadConfig(sources)
    // --port wins over PORT, which wins over the file (PORT_RULE): one rule for serve and demo.
    const config = port === undefined ? loaded : { ...loaded, port }
    const run = await entry.load()
    return await run(withoutGlobalOptions(argv, commandName), config, io, {
      databaseUrlOrigin: settingOrigin('database.url', sources),
    })
  } catch (error) {
    // A configuration a command cannot work with, or a start-up it cannot complete, is one line.
    if (!(error instanceof ConfigError) && !(error instanceof StartupError)) throw error
    io.err(`livegate: ${error.message}`)
    return 1
  }
}

// What parseArgs counts as positionals, so a stray word is refused rather than ignored.
function positionalsOf(argv: string[], entry: CommandEntry): string[] {
  const { positionals } = parseArgs({
    args: argv,
    options: { ...GLOBAL, ...entry.options },
    allowPositionals: true,
    strict: false,
  })
  return positionals
}

function plainParseError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  // Node's wording ends with advice about '--' that does not apply here.
  return message.split('. To specify a positional argument')[0]?.replace(/^Unknown option/, 'unknown option') ?? message
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
