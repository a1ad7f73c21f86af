import { MEMORY_DATA_DIR } from '../../config/index.js'
import type { Command } from './command.model.js'

/** `livegate serve`: starts the gateway and runs until SIGINT or SIGTERM. */
export const serveCommand: Command = async (_args, config, io, context) => {
  const gateway = await io.startGateway(config, { databaseUrlOrigin: context.databaseUrlOrigin, command: 'serve', ...(io.tty !== undefined ? { tty: io.tty } : {}) })
  const log = gateway.server.log
  const where = config.database.url
    ? 'PostgreSQL server'
    : config.database.dataDir === MEMORY_DATA_DIR
      ? 'embedded PGlite in memory (nothing is kept after exit)'
      : `embedded PGlite in ${config.database.dataDir} (no fsync: use a PostgreSQL server in production)`
  log.info({ url: gateway.url, database: gateway.database.driver }, `livegate listening on ${gateway.url}, database: ${where}`)
  log.info(`give the service this callback address: ${gateway.url}/callbacks (or any path below it)`)
  log.info(`GraphQL at ${gateway.url}/graphql`)
  if (config.apiKeys.length === 0) {
    log.warn(`NO API KEYS: anyone who can reach ${gateway.url} reads every service code's data; this is allowed only on a loopback address (add "apiKeys" to serve others)`)
  }
  if (config.services.length === 0) {
    log.warn('no service is configured: every callback will be refused with UNKNOWN_SERVICE (see README, Configuration)')
  }
  for (const service of config.services.filter((s) => s.verify !== 'enforce')) {
    log.warn({ serviceCode: service.serviceCode, verify: service.verify }, 'signatures of this service are not enforced')
  }
  const signal = await io.stopSignal
  log.info({ signal }, 'stopping')
  await gateway.close()
  return 0
}
