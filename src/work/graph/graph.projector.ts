import type { FastifyBaseLogger } from 'fastify'
import { type CallbackEvent, callbackEvent } from '../../fold/fold.event.js'
import type { Database, Db } from '../../storage/database.client.js'
import { allStatements, type DataFault, dataFault } from '../../storage/database.errors.js'
import { type LoggedCallback, logAfter, tryProjectorLock } from '../../storage/projector.statements.js'
import { readCheckpoint, saveCheckpoint } from '../../storage/log.kernel.js'
import { compactTaskCounts } from '../../storage/graph/task-count.statements.js'
import { applyToGraph, callbackEvidence } from './graph.evidence.js'
import type { Metrics } from '../metrics.registry.js'
import { PassScheduler } from '../pass.scheduler.js'
import type { ChannelListener } from '../channel.listener.js'
import { linksTo, recordSpan, tracingActive } from '../tracing.spans.js'

/** The projection's name in the checkpoint table. */
export const GRAPH_PROJECTION = 'graph'

// Inserts and deletes of tasks append a row per code and status to task_counts, and a status
// move two; they are folded into one per code and status, so a count reads a few rows however
// long the gateway runs. Folded once a minute, that was a statement over some 100k rows after a
// busy minute, and every callback arriving meanwhile waited for it (issue 36: the lag's p99 at half
// the maximum rate); beside the passes it would still hold the log's readers back, since none reads
// past a running transaction. So: every second, at most this many rows, in the pass's round trips.
const COUNTS_COMPACT_MS = 1000
const COUNTS_COMPACT_ROWS = 5000

/** What {@link GraphProjector} is built from. */
export interface ProjectorOptions {
  database: Database
  /** The process's listener: the log's doorbell wakes a pass (without one, only the tick does). */
  channels?: Pick<ChannelListener, 'on'> | undefined
  log: Pick<FastifyBaseLogger, 'error' | 'warn'>
  /** The most callbacks one transaction folds. */
  batchSize?: number
  /** Between two looks at the log when nothing rang (a safety net: a doorbell may be missed). */
  tickMs?: number
  metrics?: Pick<Metrics, 'projectionLagSeconds' | 'projectorPasses' | 'projectorSetAside'> | undefined
  now?: () => Date
  /** Keep the starts and ends a pass makes as webhook events (only when an endpoint is configured); yes by default. */
  derivedEvents?: boolean
}

/** What one pass did. */
type Pass = { kind: 'busy' } | { kind: 'done'; folded: number; more: boolean; pending: boolean }

/**
 * Folds the committed log into task and user states, after the callbacks were acknowledged: in
 * log order, in large batches, one transaction each, the checkpoint moved in the same
 * transaction (a batch folded again changes nothing anyway). It runs when the log's doorbell
 * rings, and every `tickMs`. On several instances, whichever takes the projector lock folds; the
 * others pass, and then stand by: they stop answering the doorbell and only look at each tick, so
 * one instance keeps folding in large batches instead of every instance waking on every commit
 * and the fold alternating between them in small ones (each try costs a transaction). A stand-by
 * that takes the lock at its tick (the folder stopped, or paused between passes) answers the
 * doorbell again; whichever then meets the lock held stands by. Whoever holds the lock when
 * another meets it leads after, so at least one instance answers the doorbell.
 */
export class GraphProjector {
  private readonly batchSize: number
  private readonly now: () => Date
  /** Whether this instance's last pass took the lock: only then does it answer the doorbell. */
  private leading = true
  private readonly scheduler: PassScheduler

  constructor(private readonly options: ProjectorOptions) {
    this.batchSize = options.batchSize ?? 5000
    this.now = options.now ?? (() => new Date())
    this.scheduler = new PassScheduler({
      channels: options.channels,
      pass: () => this.pass(),
      tickMs: options.tickMs ?? 1000,
      answersDoorbell: () => this.leading,
      onError: (error) => options.log.error({ err: error }, 'projector: a batch could not be folded; retrying'),
    })
  }

  /** Listens for the doorbell and folds what the log already holds. */
  start(): Promise<void> {
    return this.scheduler.start()
  }

  /** Stops listening and waits for a pass under way. */
  stop(): Promise<void> {
    return this.scheduler.stop()
  }

  /** Folds until the log holds nothing final that is not folded: what tests and the bench wait on. */
  catchUp(): Promise<void> {
    return this.scheduler.catchUp()
  }

  /** Asks for a pass: now if none runs, else once the running one ends. */
  wake(): void {
    this.scheduler.wake()
  }

  private async pass(): Promise<Pass> {
    if (!tracingActive()) return this.fold()
    const startTime = new Date()
    let pass: Pass
    try {
      pass = await this.fold()
    } catch (error) {
      recordSpan('projector pass', { root: true, startTime }, error)
      throw error
    }
    // A look that found nothing (the tick of an idle gateway) or stood by is not worth a span; a
    // pass that folded links to the spans that committed what it folded.
    if (pass.kind === 'done' && pass.folded > 0) {
      const attributes = { 'livegate.projector.folded': pass.folded, 'livegate.projector.more': pass.more }
      recordSpan('projector pass', { root: true, startTime, attributes, links: linksTo(this.lastFolded) })
    }
    return pass
  }

  // When the task counts' changes were last folded into a row per code and status (by whichever
  // instance folds the log: one at a time); 0 when a compaction met its limit and more wait.
  private countsCompactedAt = 0

  // The traceparents of the callbacks the last fold folded, for the pass's span.
  private lastFolded: Array<string | null> = []

  /**
   * Folds the next batch. A batch the database refuses for its values (a value logged before the
   * verdict knew its limits) would fail the same way at every try and hold back every callback
   * behind it, of every tenant: it is folded again in halves, down to the one callback that
   * cannot be folded, which is set aside. Any other failure (the database away) is retried as is.
   */
  private async fold(): Promise<Pass> {
    for (let limit = this.batchSize; ; limit = Math.ceil(limit / 2)) {
      try {
        return await this.foldBatch(limit)
      } catch (error) {
        const fault = dataFault(error)
        if (!fault) throw error
        if (limit === 1) return this.setAside(fault)
      }
    }
  }

  /**
   * Moves the checkpoint past the next callback, unfolded: it stays in the log (readable as a
   * notification, and folded again by a rebuild), and is logged and counted for an operator.
   */
  private async setAside(fault: DataFault): Promise<Pass> {
    const now = this.now()
    const pass = await this.options.database.db.transaction(async (tx) => {
      if (!(await tryProjectorLock(tx))) return { kind: 'busy' } as const
      const read = await logAfter(tx, await readCheckpoint(tx, GRAPH_PROJECTION), 1)
      const row = read.rows[0]
      if (!row) return { kind: 'done', folded: 0, more: false, pending: read.pending } as const
      await saveCheckpoint(tx, GRAPH_PROJECTION, row, now)
      return { kind: 'done', folded: 0, more: true, pending: read.pending, row } as const
    })
    if ('row' in pass) {
      const { row } = pass
      this.options.metrics?.projectorSetAside.inc({ service_code: row.serviceCode, reason: fault.code })
      this.options.log.error(
        { callbackId: row.id, serviceCode: row.serviceCode, type: row.type, sqlstate: fault.code },
        `projector: callback ${row.id} set aside, unfolded: the database refused it (${fault.message})`,
      )
    }
    return pass
  }

  private async foldBatch(limit: number): Promise<Pass> {
    const { database } = this.options
    let lagged: LoggedCallback[] = []
    const pass = await database.db.transaction(async (tx) => {
      this.leading = await tryProjectorLock(tx)
      if (!this.leading) return { kind: 'busy' } as const
      const [from] = await Promise.all([readCheckpoint(tx, GRAPH_PROJECTION), this.compactCountsWhenDue(tx)])
      const read = await logAfter(tx, from, limit)
      const last = read.rows.at(-1)
      if (!last) return { kind: 'done', folded: 0, more: false, pending: read.pending } as const
      const now = this.now()
      // The checkpoint's write does not wait for the fold's: both commit together or not at all, and
      // a round trip fewer is a turn of the event loop fewer for every callback waiting to be folded.
      const derivedEvents = this.options.derivedEvents ?? true
      const folding = applyToGraph(tx, evidenceOf(read.rows), now, { derivedEvents })
      await allStatements([folding, saveCheckpoint(tx, GRAPH_PROJECTION, last, now)])
      lagged = read.rows
      return {
        kind: 'done',
        folded: read.rows.length,
        more: read.rows.length === limit,
        pending: read.pending,
      } as const
    })
    this.options.metrics?.projectorPasses.inc({
      outcome: pass.kind === 'busy' ? 'standby' : pass.folded > 0 ? 'folded' : 'empty',
    })
    const lag = this.options.metrics?.projectionLagSeconds
    if (lag && lagged.length > 0) {
      const at = Date.now()
      for (const row of lagged) lag.observe((at - row.receivedAt.getTime()) / 1000)
    }
    this.lastFolded = tracingActive() ? lagged.map((row) => row.traceparent) : []
    return pass
  }

  /** Folds some of the counts' changes when a second has gone by (at once while more wait). */
  private async compactCountsWhenDue(tx: Db): Promise<void> {
    const at = Date.now()
    if (at - this.countsCompactedAt < COUNTS_COMPACT_MS) return
    const folded = await compactTaskCounts(tx, COUNTS_COMPACT_ROWS)
    this.countsCompactedAt = folded >= COUNTS_COMPACT_ROWS ? 0 : at
  }
}

function evidenceOf(rows: readonly LoggedCallback[]) {
  const byService = new Map<string, CallbackEvent[]>()
  for (const row of rows) {
    const event = callbackEvent(row)
    const list = byService.get(row.serviceCode)
    if (list) list.push(event)
    else byService.set(row.serviceCode, [event])
  }
  return [...byService]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([serviceCode, events]) => callbackEvidence(serviceCode, events))
}
