import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import { SpanStatusCode } from '@opentelemetry/api'
import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../../config/config.schema.js'
import { type ListedFile, listFilesBody, readListFilesAnswer } from '../../model/list-files.schema.js'
import { UpstreamError } from '../../model/upstream.error.js'
import type { Db } from '../../storage/database.client.js'
import { upsertListedFiles, type WrittenRecording } from '../../storage/graph/recording.statements.js'
import { recordArchivePoll } from '../../storage/history/archive-status.statements.js'
import { acquireLease, releaseLease } from '../../storage/lease.statements.js'
import type { CloudClient } from '../cloud.client.js'
import { LeasedPoller } from '../leased.poller.js'
import { inSpan } from '../tracing.spans.js'
import { pollDelayMs } from './task-list.answer.js'
import { appendRecordingReady } from './graph.evidence.js'

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
    events: config.webhooks.endpoints.length > 0,
  })
}

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
          const files = await this.ask(serviceCode)
          if (this.leases.stopped) return 0
          const at = this.now()
          // A new recording and its event are written together, or neither is.
          const written = await db.transaction(async (tx) => {
            const rows = await upsertListedFiles(tx, serviceCode, files, at)
            if (this.options.events) await appendRecordingReady(tx, serviceCode, rows, 'FILE_LIST', at)
            return rows
          })
          await recordArchivePoll(db, serviceCode, { ok: true, at, fileCount: files.length })
          this.failures.set(serviceCode, 0)
          if (written.length > 0) this.options.onWritten?.(serviceCode, written)
          return intervalMs
        } catch (error) {
          if (this.leases.stopped) return 0
          const failure =
            error instanceof UpstreamError
              ? error
              : new UpstreamError('NETWORK', serviceCode, `The archive of ${serviceCode} could not be stored.`, {
                  cause: error,
                })
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

  private async ask(serviceCode: string): Promise<ListedFile[]> {
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
    const read = readListFilesAnswer(reply.json)
    if ('problem' in read) {
      const said = `is not a list_files answer (${read.problem})`
      throw new UpstreamError('INVALID_ANSWER', serviceCode, `list_files for ${serviceCode} ${said}.`)
    }
    return read.files
  }
}
