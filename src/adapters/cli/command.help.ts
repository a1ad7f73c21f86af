/**
 * What `livegate <command> --help` prints besides its usage line: the options, the environment
 * variables it reads, and an example. A newcomer's first question is answered here, without the
 * guide; the guide (docs/) says the rest.
 */
export interface CommandHelp {
  /** Each option as written, and what it does. */
  options: Array<[string, string]>
  /** The environment variables the command reads, beside LIVEGATE_CONFIG. */
  env: string[]
  /** One command line that works as written. */
  example: string
}

/** Every environment variable a command may read, once. */
const ENVIRONMENT: Record<string, string> = {
  LIVEGATE_CONFIG: 'the config file, when --config is not given',
  PORT: 'the HTTP port (below --port, above "port" in the file)',
  HOST: 'the address to bind (127.0.0.1 by default)',
  DATABASE_URL: 'a PostgreSQL server; without it, the embedded PGlite database',
  LIVEGATE_DATA_DIR: 'where PGlite keeps its files (./data); memory:// keeps nothing',
  LOG_LEVEL: 'fatal, error, warn, info (the default), debug, trace or silent',
  LOG_FORMAT: 'pretty, json, or auto (pretty on a terminal)',
  OTEL_EXPORTER_OTLP_ENDPOINT: 'export traces to this OpenTelemetry collector (docs/operations.md)',
}

/** The one rule of precedence for the gateway's port, as `serve` and `demo` say it. */
export const PORT_RULE = 'The port is --port, else PORT, else "port" in the config file, else 4000.'

const CONFIG_OPTION: [string, string] = ['-c, --config FILE', 'the JSON configuration (docs/configuration.md)']
const HELP_OPTION: [string, string] = ['-h, --help', 'this help']

export const HELP: Record<string, CommandHelp> = {
  serve: {
    options: [
      CONFIG_OPTION,
      ['--port N', 'the HTTP port (0: any free port)'],
      ['--workers N', 'gateway processes behind the port (default: one per core on PostgreSQL, 1 on PGlite)'],
      HELP_OPTION,
    ],
    env: [
      'LIVEGATE_CONFIG',
      'PORT',
      'HOST',
      'DATABASE_URL',
      'LIVEGATE_DATA_DIR',
      'LOG_LEVEL',
      'LOG_FORMAT',
      'OTEL_EXPORTER_OTLP_ENDPOINT',
    ],
    example: 'livegate serve --config livegate.json --port 4001',
  },
  migrate: {
    options: [CONFIG_OPTION, HELP_OPTION],
    env: ['LIVEGATE_CONFIG', 'DATABASE_URL', 'LIVEGATE_DATA_DIR', 'LOG_LEVEL'],
    example: 'DATABASE_URL=postgres://livegate@db.internal/livegate livegate migrate',
  },
  demo: {
    options: [
      ['--port N', "the gateway's HTTP port"],
      ['--simulator-port N', "the simulated cloud's port (4100)"],
      ['--profile day|burst', "day: tasks that live minutes (the default); burst: the tests' seconds-long tasks"],
      ['--sessions N', 'tasks per round (24 for day, 8 for burst)'],
      ['--rate N', 'callbacks a second, for burst (4)'],
      CONFIG_OPTION,
      HELP_OPTION,
    ],
    env: ['PORT', 'LOG_LEVEL'],
    example: 'livegate demo --port 4001 --profile burst',
  },
  schema: {
    options: [
      ['sdl', 'the schema the gateway serves (the default)'],
      ['possible-types', "a client cache's possibleTypes and keyFields, as TypeScript"],
      HELP_OPTION,
    ],
    env: [],
    example: 'livegate schema > schema.graphql',
  },
  sign: {
    options: [
      ['name=value …', "the callback's fields (type, hashed_id, …), signed with the service's first secret"],
      ['--service CODE', 'the service code to sign for (the first configured)'],
      ['--url URL', 'where to send it (http://127.0.0.1:<port>/callbacks)'],
      ['--get', 'send the fields as a GET query instead of a form POST'],
      CONFIG_OPTION,
      HELP_OPTION,
    ],
    env: ['LIVEGATE_CONFIG', 'PORT'],
    example: 'eval "$(livegate sign --config livegate.json type=0 hashed_id=demo-task author=alice)"',
  },
  simulate: {
    options: [
      ['--gateway URL', "send the scenario's signed callbacks to this gateway"],
      ['--port N', "the simulated cloud's own port, for task_list (4100)"],
      ['--host ADDRESS', 'where the simulated cloud listens (127.0.0.1)'],
      ['--seed N, --sessions N, --rate N', 'the scenario: its seed (1), tasks (5), callbacks a second (5)'],
      ['--loop', 'play the scenario again and again, until stopped'],
      CONFIG_OPTION,
      HELP_OPTION,
    ],
    env: ['LIVEGATE_CONFIG'],
    example: 'livegate simulate --config livegate.json --gateway http://127.0.0.1:4000 --loop',
  },
}

/** The long help: the usage and summary the caller wrote, then options, environment and example. */
export function helpText(usage: string, help: CommandHelp, note?: string): string {
  const width = Math.max(...help.options.map(([option]) => option.length)) + 2
  const lines = [usage, '', 'options:', ...help.options.map(([option, text]) => `  ${option.padEnd(width)}${text}`)]
  if (help.env.length > 0) {
    const envWidth = Math.max(...help.env.map((name) => name.length)) + 2
    lines.push('', 'environment:', ...help.env.map((name) => `  ${name.padEnd(envWidth)}${ENVIRONMENT[name] ?? ''}`))
  }
  if (note) lines.push('', note)
  lines.push('', 'example:', `  ${help.example}`)
  return lines.join('\n')
}
