import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'drizzle-orm'
import { describe, it } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, type StartOptions, startGateway } from '../../src/gateway.assembly.js'
import { comparePositions, type LogPosition } from '../../src/model/log.position.js'
import { type Database, resultRows } from '../../src/storage/database.client.js'
import { readCheckpoint } from '../../src/storage/log.kernel.js'
import { webhookEventsEnd } from '../../src/storage/outbound/webhook.statements.js'
import { GRAPH_PROJECTION } from '../../src/work/graph/graph.projector.js'
import { WEBHOOK_CALLBACKS_CHECKPOINT, WEBHOOK_EVENTS_CHECKPOINT } from '../../src/work/outbound/webhook.enqueuer.js'
import { databaseEnv, type TestDatabase } from './database.fixture.js'
import { type ServeProcess, startServeProcess } from './livegate.process.js'

/**
 * Which gateway the integration suites run against. By default one in-process gateway per file
 * (`startGateway`); with TEST_GATEWAY=serve, a real `livegate serve --workers 2` process (two HTTP
 * workers behind one port and, with endpoints, the webhook worker) on the PostgreSQL server named
 * by TEST_DATABASE_URL, started from the same configuration: the topology users run.
 */
export const gatewayMode: 'in-process' | 'serve' = process.env.TEST_GATEWAY === 'serve' ? 'serve' : 'in-process'
export const servingWorkers = gatewayMode === 'serve'

/** What a test may ask of either gateway: only what a process offers from outside, and the database beside it. */
export interface TestGateway {
  url: string
  /** The test's own connection to the gateway's database (the same database in both modes). */
  database: Database
  /** Resolves once every callback kept so far is folded into the graph. */
  settle(): Promise<void>
  /** Resolves once every event kept so far (derived ones too) is put in line for the webhook endpoints. */
  settleWebhooks(): Promise<void>
  /** The gateway's JSON log lines so far, one entry a line (when started with `logs: true`). */
  logLines(): string[]
  /** The in-process gateway, for what only it offers; undefined in serve mode (see {@link inProcessOnly}). */
  inProcess: Gateway | undefined
  close(): Promise<void>
}

/** How {@link startTestGateway} starts a gateway beyond its configuration. */
export interface TestGatewayOptions {
  /** Log at `info` as JSON lines, read back through {@link TestGateway.logLines}. */
  logs?: boolean
  /** A second instance's own connection; in serve mode every process has its own anyway. */
  database?: Database
  /** Only in process: a clock of the test's (`inProcessOnly` suites). */
  now?: StartOptions['now']
}

// A worker's start (tsx compiling, on a busy machine) takes a while: a limit against hanging, not a measure.
const READY_LIMIT_MS = 240_000
// How long a settle waits for the projector or the enqueuer: a limit against hanging, not a measure.
const SETTLE_LIMIT_MS = 120_000
// How long a stopping process may take before it is killed: workers answer what is under way first.
const STOP_LIMIT_MS = 60_000

/**
 * Starts the gateway a suite runs against, from a configuration file's value, on the test's
 * database: in process, or as `serve --workers 2` (TEST_GATEWAY=serve).
 */
export async function startTestGateway(
  value: Record<string, unknown>,
  db: TestDatabase,
  options: TestGatewayOptions = {},
): Promise<TestGateway> {
  const logged = { ...value, log: { level: 'info', format: 'json' } }
  if (gatewayMode === 'in-process') return startInProcess(options.logs ? logged : value, db, options)
  if (!db.url) throw new Error('TEST_GATEWAY=serve needs a PostgreSQL server: set TEST_DATABASE_URL too')
  if (options.now) throw new Error('a clock of the test exists only in process: mark the test itInProcess')
  const dir = mkdtempSync(join(tmpdir(), 'livegate-serve-mode-'))
  const file = join(dir, 'livegate.json')
  // At info always: the process says where it listens in its log.
  writeFileSync(file, JSON.stringify(logged))
  const serve = await startServeProcess(['--config', file, '--workers', '2'], {
    ...process.env,
    ...databaseEnv(db),
    // Its spool of its own: not the checkout's ./data, which other processes of the suite use.
    LIVEGATE_DATA_DIR: dir,
  })
  try {
    await untilReady(serve)
  } catch (error) {
    await stopProcess(serve)
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  const database = db.database
  return {
    url: serve.url,
    database,
    settle: () => settleProjection(database),
    async settleWebhooks() {
      await settleProjection(database)
      await settleEnqueuer(database)
    },
    logLines: () =>
      serve
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{')),
    inProcess: undefined,
    async close() {
      await stopProcess(serve)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

async function startInProcess(
  value: Record<string, unknown>,
  db: TestDatabase,
  options: TestGatewayOptions,
): Promise<TestGateway> {
  const lines: string[] = []
  const gateway = await startGateway(loadConfig({ env: {}, value }), {
    database: options.database ?? db.database,
    ...(options.now ? { now: options.now } : {}),
    ...(options.logs ? { logStream: { write: (line: string) => void lines.push(line) } } : {}),
  })
  return {
    url: gateway.url,
    database: gateway.database,
    settle: () => gateway.settle(),
    async settleWebhooks() {
      await gateway.settle()
      await gateway.parts.webhooks.settle()
    },
    logLines: () =>
      lines
        .join('')
        .split('\n')
        .filter((line) => line.startsWith('{')),
    inProcess: gateway,
    close: () => gateway.close(),
  }
}

/**
 * A suite or test that needs the in-process gateway's inside (a clock of its own, a part called
 * directly): in serve mode it is skipped, and its name says why.
 */
export const describeInProcess = (name: string, reason: string, body: () => void) =>
  describe.skipIf(servingWorkers)(servingWorkers ? `${name} (in process only: ${reason})` : name, body)

/** One test that needs the in-process gateway, named as {@link describeInProcess} names a suite. */
export const itInProcess = (name: string, reason: string, body: () => Promise<void>, timeout?: number) =>
  it.skipIf(servingWorkers)(servingWorkers ? `${name} (in process only: ${reason})` : name, body, timeout)

/** The in-process gateway of a test that runs only in process ({@link itInProcess}). */
export function inProcessOnly(gateway: TestGateway): Gateway {
  if (!gateway.inProcess) throw new Error('this test reaches into the in-process gateway: mark it itInProcess')
  return gateway.inProcess
}

/**
 * Waits until a condition holds, looking every `intervalMs`, for at most `limitMs` (a limit against hanging, not a
 * measure). A loop rather than expect.poll: a gateway starts in beforeAll too, where expect.poll is refused.
 */
async function until(condition: () => Promise<boolean>, limitMs: number, intervalMs: number, what: () => string) {
  for (const limit = Date.now() + limitMs; ; await new Promise((resolve) => setTimeout(resolve, intervalMs))) {
    if (await condition()) return
    if (Date.now() > limit) throw new Error(`${what()} within ${limitMs / 1000} s`)
  }
}

/** Waits until the cluster's `/readyz` says every HTTP worker is ready, as a load balancer would. */
async function untilReady(serve: ServeProcess): Promise<void> {
  const ready = async () => {
    if (serve.process.exitCode !== null) throw new Error(`serve exited ${serve.process.exitCode}: ${serve.output()}`)
    const answer = await fetch(`${serve.url}/readyz`).catch(() => undefined)
    if (!answer) return false
    const report = (await answer.json().catch(() => ({}))) as { ready?: boolean; workers?: unknown[] }
    return report.ready === true && (report.workers?.length ?? 0) >= 2
  }
  await until(ready, READY_LIMIT_MS, 250, () => `serve --workers 2 was not ready: ${serve.output()}`)
}

async function stopProcess(serve: ServeProcess): Promise<void> {
  if (serve.process.exitCode !== null || serve.process.signalCode !== null) return
  const exited = new Promise((resolve) => serve.process.once('exit', resolve))
  serve.process.kill('SIGTERM')
  const timer = setTimeout(() => serve.process.kill('SIGKILL'), STOP_LIMIT_MS)
  await exited
  clearTimeout(timer)
}

/** The newest callback committed so far, final or not yet: what a settle waits to see folded. */
async function newestCallback(database: Database): Promise<LogPosition> {
  const [row] = resultRows<{ xid: string; id: string }>(
    await database.db.execute(sql`select xid::text as xid, id from callbacks order by xid desc, id desc limit 1`),
  )
  return row ? { xid: row.xid, id: Number(row.id) } : { xid: '0', id: 0 }
}

/** Waits until a reader's checkpoint has reached a position: what the process writes once it has read that far. */
async function untilRead(database: Database, name: string, target: LogPosition): Promise<void> {
  if (comparePositions(target, { xid: '0', id: 0 }) === 0) return
  const read = async () => comparePositions(await readCheckpoint(database.db, name), target) >= 0
  await until(read, SETTLE_LIMIT_MS, 50, () => `${name} did not read as far as ${target.xid}/${target.id}`)
}

/** Serve mode's settle: the projector's checkpoint, read from the database, has passed what was kept. */
async function settleProjection(database: Database): Promise<void> {
  await untilRead(database, GRAPH_PROJECTION, await newestCallback(database))
}

/** Serve mode's webhook settle: the webhook worker's enqueuer has read both logs as far as they went. */
async function settleEnqueuer(database: Database): Promise<void> {
  const [callbacksEnd, eventsEnd] = [await newestCallback(database), await webhookEventsEnd(database.db)]
  await untilRead(database, WEBHOOK_CALLBACKS_CHECKPOINT, callbacksEnd)
  await untilRead(database, WEBHOOK_EVENTS_CHECKPOINT, eventsEnd)
}
