import type { Logger } from 'drizzle-orm'
import { loadConfig, MEMORY_DATA_DIR } from '../../src/config/index.js'
import { listFilesAnswerSchema, listFilesBody, readListedFile } from '../../src/model/list-files.schema.js'
import { type Database, openDatabase } from '../../src/storage/database.client.js'
import { upsertListedFiles } from '../../src/storage/graph/recording.statements.js'
import { CloudClient } from '../../src/work/cloud.client.js'
import { ArchivePoller } from '../../src/work/graph/archive.poller.js'
import type { ArchiveCloud } from './archive.cloud.js'
import { mainThreadCpuMs, postgresCpuMs } from './process.cpu.js'

/** Where one answer's CPU went, per answer, over a batch of them. */
export interface IntakeCost {
  /** This process's main thread (livegate's code), ms per answer. */
  nodeMs: number
  /** The PostgreSQL server, all its processes, ms per answer. */
  postgresMs: number
  /** Wall time, ms per answer. */
  wallMs: number
  answers: number
}

/** One catalogue under measurement: the real poller against its simulated cloud, and the upsert alone. */
export interface Intake {
  /**
   * `ArchivePoller`'s own poll: the signed request, the answer parsed and validated, the upsert and
   * its events in one transaction, the status.
   */
  poll(answers: number): Promise<IntakeCost>
  /**
   * The same poll with the network taken out: the signed client's `fetch` hands it the simulator's
   * answer (its bytes as they arrived), so every step after the bytes is livegate's code as it runs.
   */
  handed(answers: number): Promise<IntakeCost>
  /** The size of the simulator's answer, in bytes. */
  answerBytes(): number
  /** The storage function the poller calls (`upsertListedFiles`), on the same answer parsed once. */
  upsert(answers: number): Promise<IntakeCost>
  /** Catalogue rows any answer wrote since the start (an answer with nothing new writes none). */
  written(): number
  close(): Promise<void>
}

// The poller's private step that one timer tick runs, and its count of failures in a row; called here
// directly so nothing waits on timers.
type Pollable = { poll(serviceCode: string): Promise<number>; failures: Map<string, number> }

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' }
const silent = { info() {}, warn() {}, error() {}, debug() {} }

/**
 * Batches of answers measured by their CPU: this process's main thread and the PostgreSQL server,
 * the catalogue's backends and the server's own processes (a shared server's other databases are
 * someone else's work).
 */
async function measured(
  server: { port: string; database: string },
  answers: number,
  one: () => Promise<void>,
): Promise<IntakeCost> {
  const postgres = () => postgresCpuMs(server.port, server.database)
  const node = mainThreadCpuMs()
  const pg = postgres()
  const begun = performance.now()
  for (let i = 0; i < answers; i++) await one()
  return {
    nodeMs: (mainThreadCpuMs() - node) / answers,
    postgresMs: (postgres() - pg) / answers,
    wallMs: (performance.now() - begun) / answers,
    answers,
  }
}

/**
 * The archive poller of one service code on a seeded catalogue, asking a simulated cloud whose
 * archive is the catalogue's newest listed files. livegate's code runs unchanged: the poller is
 * built as `archivePollerFor` builds it (100 files, events on) and its one poll is called in turn.
 */
export async function openIntake(options: {
  databaseUrl: string
  postgresPort: string
  serviceCode: string
  secret: string
  cloud: ArchiveCloud
  /** Told of every statement sent (for EXPLAIN). */
  logger?: Logger
}): Promise<Intake> {
  const { serviceCode } = options
  const server = { port: options.postgresPort, database: new URL(options.databaseUrl).pathname.slice(1) }
  const database: Database = await openDatabase({
    url: options.databaseUrl,
    dataDir: MEMORY_DATA_DIR,
    ...(options.logger ? { logger: options.logger } : {}),
  })
  const config = loadConfig({
    env: {},
    value: { services: [{ serviceCode, secrets: [options.secret], baseUrl: options.cloud.url }] },
  })
  // The simulator's answer, as its bytes arrived: the poller that is handed it reads this text.
  let answer = ''
  const capturing: typeof fetch = async (url, init) => {
    const response = await fetch(url, init)
    answer = await response.text()
    return new Response(answer, { status: response.status, headers: response.headers })
  }
  const handedIn: typeof fetch = async () => new Response(answer, { status: 200, headers: JSON_HEADERS })
  const overHttp = new CloudClient({ services: config.services, fetch: capturing })
  const handed = new CloudClient({ services: config.services, fetch: handedIn })
  let written = 0
  const pollerOf = (cloud: CloudClient) =>
    new ArchivePoller({
      db: database.db,
      cloud,
      serviceCodes: [serviceCode],
      intervalMs: config.archive.pollIntervalMs,
      limit: config.archive.limit,
      timeoutMs: config.upstream.timeoutMs,
      maxBackoffMs: config.upstream.maxBackoffMs,
      instanceId: 'bench',
      log: silent,
      events: true,
      onWritten: (_, rows) => {
        written += rows.length
      },
    })
  const pollers = [pollerOf(overHttp), pollerOf(handed)] as const
  const pollOnce = (poller: ArchivePoller) => async () => {
    const pollable = poller as unknown as Pollable
    await pollable.poll(serviceCode)
    if ((pollable.failures.get(serviceCode) ?? 0) > 0) {
      throw new Error(`list_files poll of ${serviceCode} failed (see archive_status)`)
    }
  }
  const body = listFilesBody(config.archive.limit)
  const reply = await overHttp.send({ serviceCode, operation: 'management', body, timeoutMs: 5000 })
  const files = listFilesAnswerSchema.parse(reply.json).items.flatMap((item) => readListedFile(item) ?? [])
  if (files.length !== config.archive.limit) throw new Error(`the simulated archive listed ${files.length} files`)
  return {
    poll: (answers) => measured(server, answers, pollOnce(pollers[0])),
    handed: (answers) => measured(server, answers, pollOnce(pollers[1])),
    answerBytes: () => Buffer.byteLength(answer),
    upsert: (answers) =>
      measured(server, answers, async () => {
        written += (await upsertListedFiles(database.db, serviceCode, files, new Date())).length
      }),
    written: () => written,
    async close() {
      for (const poller of pollers) await poller.stop()
      overHttp.close()
      handed.close()
      await database.close()
    },
  }
}
