import { startBenchGateway } from './bench.gateway.js'
import { isBenchChild, residentSet, serveCommands } from './fanout.process.js'
import { SEED_SERVICE_CODE, seedTasks } from './query.seed.js'

/**
 * The server side of the `auth` part, in a process of its own so its resident set is the
 * server's alone: livegate on a PostgreSQL database with one API key and the bench provider's
 * public key in `auth.jwt.keys`, its data seeded as the query part seeds it.
 */

/** The API key the bench compares a token with; it reads every code, as the tokens do. */
export const AUTH_BENCH_KEY = 'bench-operators-key'
/** The issuer the bench signs its tokens as. */
export const AUTH_BENCH_ISSUER = 'https://id.bench.invalid/'

/** What `start` is given. */
export interface AuthServerArgs {
  databaseUrl: string
  /** The provider's public key, as a JWK with its `alg` and `kid`. */
  jwk: Record<string, unknown>
  /** Tasks to seed before answering (0: none). */
  tasks: number
}

if (isBenchChild(import.meta.url)) {
  let close: () => Promise<void> = async () => {}
  serveCommands(
    async (command, args) => {
      if (command === 'start') {
        const { databaseUrl, jwk, tasks } = args as AuthServerArgs
        const started = await startBenchGateway({
          databaseUrl,
          service: { serviceCode: SEED_SERVICE_CODE, secret: 'bench-secret' },
          value: {
            retention: { intervalMs: 0 },
            apiKeys: [{ name: 'bench', key: AUTH_BENCH_KEY, serviceCodes: ['*'] }],
            auth: { jwt: { keys: [jwk], issuer: AUTH_BENCH_ISSUER, audience: 'livegate' } },
          },
        })
        close = started.close
        if (tasks > 0) await seedTasks(started.gateway.database, tasks)
        return { url: started.gateway.url }
      }
      if (command === 'rss') return residentSet()
      throw new Error(`unknown command ${command}`)
    },
    () => close(),
  )
}
