import cluster from 'node:cluster'
import type { FastifyBaseLogger } from 'fastify'
import { type Config, MEMORY_DATA_DIR } from '../../config/index.js'
import type { Command } from './command.model.js'
import { workerCount } from './serve.workers.js'

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
  // Loaded only here: a primary of several workers serves nothing and need not hold the gateway's modules.
  const { startGateway } = await import('../http/gateway.start.js')
  const gateway = await startGateway(config, { databaseUrlOrigin: context.databaseUrlOrigin, command: 'serve', ...(io.tty !== undefined ? { tty: io.tty } : {}) })
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
  log.info({ url, database: config.database.url ? 'postgres' : 'pglite' }, `livegate listening on ${url}, database: ${where}`)
  log.info(`give the service this callback address: ${url}/callbacks (or any path below it)`)
  log.info(`GraphQL at ${url}/graphql`)
  if (config.apiKeys.length === 0) {
    log.warn(`NO API KEYS: anyone who can reach ${url} reads every service code's data; this is allowed only on a loopback address (add "apiKeys" to serve others)`)
  }
  if (config.services.length === 0) {
    log.warn('no service is configured: every callback will be refused with UNKNOWN_SERVICE (see README, Configuration)')
  }
  for (const service of config.services.filter((s) => s.verify !== 'enforce')) {
    log.warn({ serviceCode: service.serviceCode, verify: service.verify }, 'signatures of this service are not enforced')
  }
}
