import { availableParallelism } from 'node:os'
import { ConfigError, type Config } from '../../config/index.js'

/**
 * How many processes `serve` runs behind its port: `--workers N`, else the `workers` setting,
 * else one per core on a PostgreSQL server and one on PGlite. PGlite is one process's own
 * database (it allows a single connection), so more than one worker on it is refused.
 */
export function workerCount(args: string[], config: Pick<Config, 'workers' | 'database'>, cores = availableParallelism()): number {
  const flag = flagValue(args)
  let workers = config.workers
  let origin = 'workers'
  if (flag !== undefined) {
    if (!/^[1-9]\d{0,2}$/.test(flag) || Number(flag) > 256) throw new ConfigError(`--workers: "${flag}" is not a whole number from 1 to 256`)
    workers = Number(flag)
    origin = '--workers'
  }
  if (!config.database.url) {
    if (workers !== undefined && workers > 1) {
      throw new ConfigError(`${origin} ${workers}: the embedded PGlite database allows one connection, so it serves one worker; set DATABASE_URL to a PostgreSQL server to run more`)
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
