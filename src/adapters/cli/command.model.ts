import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../../config/index.js'

/** A running gateway, as the commands that start one see it. */
export interface RunningGateway {
  url: string
  server: { log: FastifyBaseLogger }
  database: { driver: string }
  close(): Promise<void>
}

/** Starts a gateway: the assembly's `startGateway` (src/gateway.assembly.ts), handed in by main.ts. */
export type GatewayStarter = (
  config: Config,
  options: { databaseUrlOrigin?: string; command?: string; tty?: boolean; deliverWebhooks?: boolean },
) => Promise<RunningGateway>

/** A running webhook worker of `serve --workers N` (src/webhooks.assembly.ts). */
export interface RunningWebhookWorker {
  log: Pick<FastifyBaseLogger, 'info'>
  close(): Promise<void>
}

/** Starts the webhook worker: the assembly's `startWebhookWorker`, handed in by main.ts. */
export type WebhookWorkerStarter = (
  config: Config,
  options: { databaseUrlOrigin?: string; tty?: boolean },
) => Promise<RunningWebhookWorker>

/** What a command may touch of the outside world; main.ts hands in the real ones. */
export interface CliIo {
  env: Record<string, string | undefined>
  out: (line: string) => void
  err: (line: string) => void
  /** Resolves when the process is asked to stop (SIGINT, SIGTERM). */
  stopSignal: Promise<string>
  /** Whether standard output is a terminal (readable logs rather than JSON). */
  tty?: boolean
  /** How `serve` and `demo` start a gateway. */
  startGateway: GatewayStarter
  /** How a worker of `serve --workers N` starts as the cluster's webhook worker. */
  startWebhookWorker?: WebhookWorkerStarter
}

/** What a command is told besides its configuration. */
export interface CommandContext {
  /** Where `database.url` came from, for a message about a server that cannot be reached. */
  databaseUrlOrigin: string
}

/** A command: its remaining arguments and the loaded configuration, to an exit code. */
export type Command = (args: string[], config: Config, io: CliIo, context: CommandContext) => Promise<number>
