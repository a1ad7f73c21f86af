import cluster from 'node:cluster'
import { availableParallelism } from 'node:os'
import type { FastifyBaseLogger } from 'fastify'
import { type Config, ConfigError, MEMORY_DATA_DIR } from '../../config/index.js'
import { WORKER_ROLE_VARIABLE } from '../ops/cluster.link.js'
import type { Command } from './command.model.js'

/**
 * `livegate serve [--workers N]`: starts the gateway and runs until SIGINT or SIGTERM. With more
 * than one worker, this process is the primary of N gateway processes (serve.cluster.ts); each
 * worker runs this same command and lands in the single gateway below.
 */
export const serveCommand: Command = async (args, config, io, context) => {
  if (cluster.isPrimary) {
    const workers = workerCount(args, config)
    if (workers > 1) {
      const { serveCluster } = await import('./serve.cluster.js')
      return serveCluster(config, workers, io, (log, url) => announce(log, url, config))
    }
  }
  const role = cluster.isWorker ? io.env[WORKER_ROLE_VARIABLE] : undefined
  if (role === 'webhooks' && io.startWebhookWorker) {
    const worker = await io.startWebhookWorker(config, {
      databaseUrlOrigin: context.databaseUrlOrigin,
      ...(io.tty !== undefined ? { tty: io.tty } : {}),
    })
    const signal = await io.stopSignal
    worker.log.info({ signal }, 'stopping')
    await worker.close()
    cluster.worker?.disconnect()
    return 0
  }
  // io.startGateway loads the assembly only when called: a primary of several workers serves
  // nothing and need not hold the gateway's modules.
  const gateway = await io.startGateway(config, {
    databaseUrlOrigin: context.databaseUrlOrigin,
    command: 'serve',
    ...(io.tty !== undefined ? { tty: io.tty } : {}),
    // An HTTP worker beside the cluster's webhook worker leaves the delivering to it.
    ...(role === 'http' ? { deliverWebhooks: false } : {}),
  })
  const log = gateway.server.log
  // The primary announces the whole once every worker listens.
  if (cluster.isWorker) log.info({ url: gateway.url }, 'worker listening')
  else announce(log, gateway.url, config)
  const signal = await io.stopSignal
  log.info({ signal }, 'stopping')
  await gateway.close()
  // A worker's channel to its primary would keep it alive: it is closed once the gateway is.
  if (cluster.isWorker) cluster.worker?.disconnect()
  return 0
}

/** The lines an operator reads at start: where, which database, what to give the service, what is unsafe. */
function announce(log: Pick<FastifyBaseLogger, 'info' | 'warn'>, url: string, config: Config): void {
  const where = config.database.url
    ? 'PostgreSQL server'
    : config.database.dataDir === MEMORY_DATA_DIR
      ? 'embedded PGlite in memory (nothing is kept after exit)'
      : `embedded PGlite in ${config.database.dataDir} (no fsync: use a PostgreSQL server in production)`
  log.info(
    { url, database: config.database.url ? 'postgres' : 'pglite' },
    `livegate listening on ${url}, database: ${where}`,
  )
  log.info(`give the service this callback address: ${url}/callbacks (or any path below it)`)
  log.info(`GraphQL at ${url}/graphql`)
  if (config.apiKeys.length === 0) {
    log.warn(
      `NO API KEYS: anyone who can reach ${url} reads every service code's data; this is allowed only on a ` +
        `loopback address (add "apiKeys" to serve others)`,
    )
  }
  if (config.services.length === 0) {
    log.warn(
      'no service is configured: every callback will be refused with UNKNOWN_SERVICE (see README, Configuration)',
    )
  }
  for (const service of config.services.filter((s) => s.verify !== 'enforce')) {
    log.warn(
      { serviceCode: service.serviceCode, verify: service.verify },
      'signatures of this service are not enforced',
    )
  }
}

/**
 * How many processes `serve` runs behind its port: `--workers N`, else the `workers` setting,
 * else one per core on a PostgreSQL server and one on PGlite. PGlite is one process's own
 * database (it allows a single connection), so more than one worker on it is refused.
 */
export function workerCount(
  args: string[],
  config: Pick<Config, 'workers' | 'database'>,
  cores = availableParallelism(),
): number {
  const flag = flagValue(args)
  let workers = config.workers
  let origin = 'workers'
  if (flag !== undefined) {
    if (!/^[1-9]\d{0,2}$/.test(flag) || Number(flag) > 256)
      throw new ConfigError(`--workers: "${flag}" is not a whole number from 1 to 256`)
    workers = Number(flag)
    origin = '--workers'
  }
  if (!config.database.url) {
    if (workers !== undefined && workers > 1) {
      throw new ConfigError(
        `${origin} ${workers}: the embedded PGlite database allows one connection, so it serves one worker; set ` +
          `DATABASE_URL to a PostgreSQL server to run more`,
      )
    }
    return 1
  }
  return workers ?? cores
}

function flagValue(args: string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string
    if (arg === '--workers') return args[i + 1] ?? ''
    if (arg.startsWith('--workers=')) return arg.slice('--workers='.length)
  }
  return undefined
}
