import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { applyRuntimeSettings } from '../../src/adapters/cli/runtime.settings.js'
import { type Config, loadConfig, MEMORY_DATA_DIR } from '../../src/config/index.js'
import type { Database } from '../../src/storage/database.client.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'

/** What {@link startBenchGateway} needs. */
export interface BenchGatewayOptions {
  /** A PostgreSQL database; PGlite in memory without one. */
  databaseUrl?: string
  /** The one service whose callbacks the bench signs. */
  service: { serviceCode: string; secret: string }
  /** Settings beyond the bench's defaults, e.g. `{ retention: { intervalMs: 0 } }`. */
  value?: Record<string, unknown>
  /** A database already open (and closed by the caller) instead of one opened from the config. */
  database?: Database
  /** A task page's parts as JSON text (on, off); by default where `JSON.rawJSON` exists. */
  jsonText?: boolean | undefined
}

/** A gateway under measurement, with the config it was started from. */
export interface BenchGateway {
  gateway: Gateway
  config: Config
  /** Closes the gateway and removes its scratch folder (spool, PGlite files). */
  close(): Promise<void>
}

/**
 * Starts livegate as a deployment would run it: loopback, an ephemeral port, logging at the
 * default level (set BENCH_LOG_LEVEL to change it) into a sink, since a deployment pays for
 * every line it formats, and its spool in a scratch folder of its own.
 */
export async function startBenchGateway(options: BenchGatewayOptions): Promise<BenchGateway> {
  // The process settings `node dist/main.js` applies (BENCH_RUNTIME=bare leaves V8's defaults, to compare).
  const runtime = { v8: process.versions.v8, execArgv: process.execArgv }
  if (process.env.BENCH_RUNTIME !== 'bare') applyRuntimeSettings(runtime)
  const scratch = mkdtempSync(join(tmpdir(), 'livegate-bench-'))
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
  const gateway = await startGateway(config, {
    logStream: { write: () => {} },
    ...(options.database ? { database: options.database } : {}),
    ...(options.jsonText !== undefined ? { jsonText: options.jsonText } : {}),
  })
  return {
    gateway,
    config,
    async close() {
      await gateway.close()
      rmSync(scratch, { recursive: true, force: true })
    },
  }
}
