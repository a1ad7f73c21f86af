import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MEMORY_DATA_DIR } from '../../src/config/index.js'
import type { BenchGateway, BenchGatewayOptions } from './bench.gateway.js'

/** This worktree: its own build is the default of the A/B scripts. */
export const THIS_BUILD = new URL('../..', import.meta.url).pathname.replace(/\/$/, '')

/**
 * {@link startBenchGateway}'s gateway, from the compiled `dist/` of a build given by its folder
 * (this worktree, or another checkout with `npm run build` done): A/B scripts start two builds'
 * gateways side by side, each on its own node_modules, both compiled alike (tsx would read the
 * other checkout's sources without its tsconfig).
 */
export async function startBuildGateway(build: string, options: BenchGatewayOptions): Promise<BenchGateway> {
  const { loadConfig } = (await import(`${build}/dist/config/index.js`)) as typeof import('../../src/config/index.js')
  const { startGateway } = (await import(
    `${build}/dist/gateway.assembly.js`
  )) as typeof import('../../src/gateway.assembly.js')
  const scratch = mkdtempSync(join(tmpdir(), 'livegate-ab-'))
  const config = loadConfig({
    env: {},
    value: {
      port: 0,
      host: '127.0.0.1',
      log: { level: process.env.BENCH_LOG_LEVEL ?? 'info' },
      database: options.databaseUrl ? { url: options.databaseUrl, dataDir: scratch } : { dataDir: MEMORY_DATA_DIR },
      spool: { dir: join(scratch, 'spool') },
      services: [{ serviceCode: options.service.serviceCode, secrets: [options.service.secret] }],
      ...options.value,
    },
  })
  const gateway = await startGateway(config, { logStream: { write: () => {} } })
  return {
    gateway,
    config,
    async close() {
      await gateway.close()
      rmSync(scratch, { recursive: true, force: true })
    },
  }
}
