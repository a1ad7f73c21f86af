import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import { SpanStatusCode } from '@opentelemetry/api'
import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../../config/config.schema.js'
import { type ListedFile, listFilesBody, readListFilesAnswer } from '../../model/list-files.schema.js'
import { UpstreamError } from '../upstream.error.js'
import type { Db } from '../../storage/database.client.js'
import { dataFault } from '../../storage/database.errors.js'
import { upsertListedFiles, type WrittenRecording } from '../../storage/graph/recording.statements.js'
import { recordArchivePoll } from '../../storage/history/archive-status.statements.js'
import { acquireLease, releaseLease } from '../../storage/lease.statements.js'
import type { CloudClient } from '../cloud.client.js'
import type { Metrics } from '../metrics.registry.js'
import { LeasedPoller } from '../leased.poller.js'
import { inSpan } from '../tracing.spans.js'
import { pollDelayMs } from './task-list.answer.js'
import { appendRecordingReady } from './graph.evidence.js'
import { describeLeftOut, type LeftOut, LeftOutTally } from './left-out.tally.js'

/** What {@link ArchivePoller} needs. */
export interface ArchivePollerOptions {
  db: Db
  cloud: CloudClient
  serviceCodes: readonly string[]
  intervalMs: number
  /** The newest files one request asks for. */
  limit: number
  /** One request may take this long. */
  timeoutMs: number
  /** The longest wait between two polls of a failing code. */
  maxBackoffMs: number
  instanceId: string
  log: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error' | 'debug'>
  /** Whether `recording.ready` events are kept (some webhook endpoint may want them). */
  events?: boolean
  metrics?: Pick<Metrics, 'archiveLeftOut'> | undefined
  /** Told of the catalogue rows each answer wrote. */
  onWritten?: (serviceCode: string, written: WrittenRecording[]) => void
  now?: () => Date
}

/** The archive poller for a configuration: every code with a `baseUrl` and a secret, or none when asking is off. */
export function archivePollerFor(
  config: Config,
  db: Db,
  cloud: CloudClient,
  log: ArchivePollerOptions['log'],
  metrics?: ArchivePollerOptions['metrics'],
): ArchivePoller | undefined {
  const serviceCodes = cloud.reachableCodes()
  if (serviceCodes.length === 0 || config.archive.pollIntervalMs <= 0) return undefined
  return new ArchivePoller({
    db,
    cloud,
    serviceCodes,
    intervalMs: config.archive.pollIntervalMs,
    limit: config.archive.limit,
    timeoutMs: config.upstream.timeoutMs,
    maxBackoffMs: Math.max(config.upstream.maxBackoffMs, config.archive.pollIntervalMs),
    instanceId: `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`,
    log,
    metrics,
    events: config.webhooks.endpoints.length > 0,
  })
}

// The most files one statement (and its transaction) stores. A statement over a whole answer grew
// faster than the answer (100,000 files took 306 s on PostgreSQL) and, on PGlite, held the one
// connection, and the event loop, for minutes; in statements of this size the work grows with
// the answer, and every other query gets its turn between two.
const STATEMENT_FILES = 500

const leaseName = (serviceCode: string) => `list_files:${serviceCode}`

/**
 * Asks each service code's archive (`list_files`) in the background and keeps what it lists in
 * the catalogue of recordings: queries only read what it stored, so a cloud that hangs or
 * refuses never slows a read. A lease per code picks the one instance that asks (the task list's
 * lease loop, {@link LeasedPoller}); every outcome is stored in `archive_status`, which all
 * instances read.
 */
export class ArchivePoller {
  private readonly leases: LeasedPoller
  private readonly failures = new Map<string, number>()
  private readonly now: () => Date
  // Ends a request under way when the poller stops; the shared cloud client stays open.
  private readonly closing = new AbortController()

  constructor(private readonly options: ArchivePollerOptions) {
    this.now = options.now ?? (() => new Date())
    const { db, instanceId } = options
    const leaseMs = Math.max(options.intervalMs, 1000)
    this.leases = new LeasedPoller({
      name: 'list_files',
      serviceCodes: options.serviceCodes,
      leaseMs,
      acquire: (code) => acquireLease(db, leaseName(code), instanceId, leaseMs),
      release: (code) => releaseLease(db, leaseName(code), instanceId),
      poll: (code) => this.poll(code),
      log: options.log,
    })
  }

  /** Whether this service code's archive is asked for (by this instance or another). */
  covers(serviceCode: string): boolean {
    return this.leases.covers(serviceCode)
  }

  /** Starts taking leases; a code is asked for as soon as its lease is held. */
  start(): void {
    this.leases.start()
  }

  /** Stops asking: a request under way is aborted, the leases given up for another instance. */
  async stop(): Promise<void> {
    await this.leases.stop(() => this.closing.abort())
  }

  /** One request of one code, its outcome stored; resolves to the wait before the next. */
  private poll(serviceCode: string): Promise<number> {
    return inSpan(
      'list_files poll',
      { root: true, attributes: { 'livegate.service_code': serviceCode } },
      async (span) => {
        const { db, log, intervalMs } = this.options
        try {
          const tally = new LeftOutTally()
          const answer = await this.ask(serviceCode, tally)
          if (this.leases.stopped) return 0
          const at = this.now()
          const written = await this.store(serviceCode, answer.files, at, tally)
          const leftOut = tally.list()
          const fileCount =
            answer.files.length - leftOut.reduce((n, p) => n + (p.reason === 'REFUSED' ? p.count : 0), 0)
          const note = leftOut.length > 0 ? this.leftOutNote(serviceCode, answer.listed, leftOut) : undefined
          await recordArchivePoll(db, serviceCode, { ok: true, at, fileCount, ...(note ? { note } : {}) })
          this.failures.set(serviceCode, 0)
          if (written.length > 0) this.options.onWritten?.(serviceCode, written)
          return intervalMs
        } catch (error) {
          if (this.leases.stopped) return 0
          const failure =
            error instanceof UpstreamError
              ? error
              : new UpstreamError(
                  'NETWORK',
                  serviceCode,
                  `The archive of ${serviceCode} could not be stored${said(error)}.`,
                  {
                    cause: error,
                  },
                )
          const kind = error instanceof UpstreamError ? failure.kind : 'STORE'
          span?.setStatus({ code: SpanStatusCode.ERROR, message: kind })
          log.warn({ serviceCode, kind, ret: failure.ret }, `list_files failed: ${failure.message}`)
          const failures = (this.failures.get(serviceCode) ?? 0) + 1
          this.failures.set(serviceCode, failures)
          const at = this.now()
          const poll = {
            ok: false as const,
            at,
            kind,
            message: failure.message,
            ret: failure.ret ?? null,
            consecutiveFailures: failures,
          }
          await recordArchivePoll(db, serviceCode, poll).catch((stored: unknown) =>
            log.error({ err: stored, serviceCode }, 'archive status could not be stored'),
          )
          return pollDelayMs(failures, intervalMs, this.options.maxBackoffMs, Math.random)
        }
      },
    )
  }

  /**
   * An answer's files into the catalogue, {@link STATEMENT_FILES} to a transaction: a new recording
   * and its event are written together, or neither is. A part the database refuses for its values
   * (what the answer's reading let through) is stored file by file, and a file it still refuses is
   * left out and told to the tally, so it never holds back the files beside it.
   */
  private async store(serviceCode: string, files: ListedFile[], at: Date, tally: LeftOutTally) {
    const { db } = this.options
    const storeFiles = (part: readonly ListedFile[]) =>
      db.transaction(async (tx) => {
        const rows = await upsertListedFiles(tx, serviceCode, part, at)
        if (this.options.events) await appendRecordingReady(tx, serviceCode, rows, 'FILE_LIST', at)
        return rows
      })
    const written: WrittenRecording[] = []
    for (let start = 0; start < files.length && !this.leases.stopped; start += STATEMENT_FILES) {
      const part = files.slice(start, start + STATEMENT_FILES)
      try {
        written.push(...(await storeFiles(part)))
      } catch (error) {
        if (!dataFault(error)) throw error
        for (const file of part) {
          try {
            written.push(...(await storeFiles([file])))
          } catch (refused) {
            const fault = dataFault(refused)
            if (!fault) throw refused
            tally.add('file', 'file_name', 'REFUSED')
            this.options.log.error(
              { serviceCode, sqlstate: fault.code },
              `list_files: a file of ${serviceCode} left out, the database refused it (${fault.message})`,
            )
          }
        }
      }
    }
    return written
  }

  /** What an answer left out, counted on /metrics, logged, and kept as the archive's last error. */
  private leftOutNote(serviceCode: string, listed: number, leftOut: readonly LeftOut[]) {
    for (const part of leftOut)
      this.options.metrics?.archiveLeftOut.inc(
        { service_code: serviceCode, what: part.what, reason: part.reason },
        part.count,
      )
    const { limit } = this.options
    const over = listed > limit ? `answered ${listed} files for ${limit} asked, kept the first ${limit}; ` : ''
    const message = `list_files for ${serviceCode} ${over}left out ${describeLeftOut(leftOut)}.`
    this.options.log.warn({ serviceCode, leftOut }, message)
    return { kind: 'INVALID_ANSWER', message }
  }

  private async ask(serviceCode: string, tally: LeftOutTally): Promise<{ files: ListedFile[]; listed: number }> {
    const { cloud, limit, timeoutMs } = this.options
    const request = {
      serviceCode,
      operation: 'management' as const,
      body: listFilesBody(limit),
      timeoutMs,
      signal: this.closing.signal,
    }
    const reply = await cloud.send(request)
    if (reply.ret !== 0) {
      const said = reply.ret === undefined ? 'without a ret' : `ret ${reply.ret}`
      const kind = reply.ret === undefined ? 'INVALID_ANSWER' : 'RET'
      throw new UpstreamError(
        kind,
        serviceCode,
        `list_files for ${serviceCode} answered ${said}.`,
        reply.ret === undefined ? {} : { ret: reply.ret },
      )
    }
    const read = readListFilesAnswer(reply.json, limit, (what, field, reason, count) =>
      tally.add(what, field, reason, count),
    )
    if ('problem' in read) {
      const said = `is not a list_files answer (${read.problem})`
      throw new UpstreamError('INVALID_ANSWER', serviceCode, `list_files for ${serviceCode} ${said}.`)
    }
    return read
  }
}

// What the database said of a store that failed, when it refused the values (never the statement).
function said(error: unknown): string {
  const fault = dataFault(error)
  return fault ? `: the database refused it (${fault.code}: ${fault.message})` : ''
}
