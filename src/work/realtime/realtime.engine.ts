import type { FastifyBaseLogger } from 'fastify'
import type { Database } from '../../storage/database.client.js'
import { comparePositions, type LogPosition } from '../../model/log.position.js'
import { logTail, type NotificationRow, notificationMatches } from '../../storage/notification.queries.js'
import { logEnd } from '../../storage/log.kernel.js'
import { decodeEvent, LOG_GREW, type RealtimeEvent } from '../../model/event.codec.js'
import { DOORBELL_CHANNEL, EVENT_CHANNEL, SAMPLE_CHANNEL } from '../../model/notify.channels.js'
import type { ChannelListener } from '../channel.listener.js'
import { deliverySpan } from '../tracing.spans.js'
import type { SubscriptionQueue } from './subscription.queue.js'
import { FilterGroups } from './filter.groups.js'
import { WakeScheduler } from '../wake.scheduler.js'
import {
  type EventOf,
  ROW_KINDS,
  ROW_STREAMS,
  type RowKind,
  type StreamFilter,
  type StreamItem,
  type StreamKind,
} from './stream.table.js'

/** What {@link RealtimeEngine} is built from. */
export interface EngineOptions {
  database: Database
  /** The process's listener: the engine hears the doorbell, event and sample channels through it. */
  channels: Pick<ChannelListener, 'on' | 'listening'>
  log: Pick<FastifyBaseLogger, 'warn' | 'error' | 'info'>
  /** How many undelivered events one subscriber may have before it is cut off. */
  subscriberBuffer: number
  /**
   * How often the engine looks for itself at the log's end while subscriptions are open and no
   * doorbell came: a missed doorbell costs at most this.
   */
  tickMs?: number
}

type Groups = { readonly [K in StreamKind]: FilterGroups<StreamFilter<K>, StreamItem<K>> }

// Callbacks read per statement when the log is tailed.
const TAIL_PAGE = 1000
// How soon to look again when committed callbacks wait behind an older running transaction.
const PENDING_RETRY_MS = 10
const TICK_MS = 1000

/** The event loop's next turn: once the I/O of this one is read (a receive's burst; a hand-out's next part). */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/**
 * The one realtime engine of a process: every subscription of every kind (`stream.table.ts`) is
 * served here. The doorbell (heard through the process's {@link ChannelListener}) says the log
 * grew; the engine then reads it from its own position, in log order, only as far as it is final,
 * so every subscriber sees every callback once and in the one order a resuming subscriber replays.
 * The other channels name changed rows (tasks, actions, incidents, sampled answers): each named row
 * is read once per batch of events. Every item is matched once per distinct filter, then handed to
 * every subscriber with that filter: the cost of an event grows with the number of distinct
 * filters, not of subscribers. While no notification subscription is open the log is not read at
 * all (every instance would read every callback for nobody): the engine only notes that its
 * position is behind, and moves it to the log's end before it hands anything out again.
 */
export class RealtimeEngine {
  private position: LogPosition = { xid: '0', id: 0 }
  private tailAgain = false
  /** Whether `position` is where live delivery stands: false once the log grew while nobody listened. */
  private current = true
  // A look again soon, when committed callbacks wait behind an older running transaction.
  private readonly retry = new WakeScheduler({ run: () => void this.receive(LOG_GREW) })
  private readonly ticker: WakeScheduler
  private readonly groups: Groups
  private pending: RealtimeEvent[] = []
  // Batches are read one after another and handed out in that order (a hand-out still going on takes
  // the next along: filter.groups.ts), so subscribers see events in commit order.
  private chain: Promise<void> = Promise.resolve()
  private off: Array<() => void> = []
  private lastDoorbellAt = 0
  // Changes whose reading failed: read again at the next dispatch rather than lost.
  private unread: RealtimeEvent[] = []
  private readonly tickMs: number

  constructor(private readonly options: EngineOptions) {
    this.tickMs = options.tickMs ?? TICK_MS
    const groups = <K extends StreamKind>() =>
      new FilterGroups<StreamFilter<K>, StreamItem<K>>(options.subscriberBuffer)
    this.groups = {
      notification: groups<'notification'>(),
      task: groups<'task'>(),
      action: groups<'action'>(),
      incident: groups<'incident'>(),
      sample: groups<'sample'>(),
      timeline: groups<'timeline'>(),
    }
    this.ticker = new WakeScheduler({
      run: () => {
        this.tick()
        return { within: this.tickMs }
      },
    })
  }

  /** Starts listening; callbacks final before this are not handed out (subscribers replay them). */
  async start(): Promise<void> {
    // Each time a channel is heard again, the engine reads on from its own position before it
    // waits for the next doorbell: doorbells rung while the listener was deaf are lost, the log is not.
    // NOTIFY'd by `ringDoorbell` and `notifyStatement` (storage/), within the transactions they tell of.
    for (const channel of [DOORBELL_CHANNEL, EVENT_CHANNEL, SAMPLE_CHANNEL] as const)
      this.off.push(
        this.options.channels.on(
          channel,
          (payload) => this.receive(payload),
          () => this.receive(LOG_GREW),
        ),
      )
    this.position = await logEnd(this.options.database.db)
    this.ticker.wakeIn(this.tickMs)
  }

  /** Whether the engine hears its channels (`/readyz`): false while the listening connection is lost. */
  get listening(): boolean {
    return this.options.channels.listening
  }

  private tick(): void {
    const open = Object.values(this.groups).some((groups) => !groups.empty)
    if ((open || this.unread.length > 0) && Date.now() - this.lastDoorbellAt >= this.tickMs) this.receive(LOG_GREW)
  }

  /** Where live delivery stands: every callback up to here has been handed out. */
  get livePosition(): LogPosition {
    return this.position
  }

  /** Stops listening and ends every subscription. */
  async stop(): Promise<void> {
    await Promise.all([this.retry.stop(), this.ticker.stop()])
    for (const off of this.off.splice(0)) off()
    await this.chain
    for (const groups of Object.values(this.groups)) groups.close()
  }

  /** How many subscriptions are open, of each kind. */
  get subscriptions(): {
    notifications: number
    tasks: number
    actions: number
    incidents: number
    samples: number
    timelines: number
  } {
    const { notification, task, action, incident, sample, timeline } = this.groups
    return {
      notifications: notification.size,
      tasks: task.size,
      actions: action.size,
      incidents: incident.size,
      samples: sample.size,
      timelines: timeline.size,
    }
  }

  /**
   * A queue of the items of `kind` from now on that match `filter`: the callbacks committed, the
   * tasks re-folded, the actions and incidents as stored after each change, each task's samples.
   * Read by the subscription's resolver (`adapters/graphql/reads/request.context.ts`, `subscribeTo`).
   */
  subscribe<K extends StreamKind>(kind: K, filter: StreamFilter<K>): SubscriptionQueue<StreamItem<K>> {
    return this.groups[kind].join(filter)
  }

  /**
   * Resolves once live delivery to the subscriptions open now goes on from the log's end: at once
   * while the engine reads the log, else after one look at where the log ends. A subscription
   * replays from its cursor only after this, so nothing falls between its replay and its live rows.
   */
  whenLive(): Promise<void> {
    if (this.current) return Promise.resolve()
    const moved = this.chain.then(() => this.moveToEnd())
    this.chain = moved.catch(() => {})
    return moved
  }

  private receive(payload: string): void {
    const event = decodeEvent(payload)
    if (!event) return
    this.lastDoorbellAt = Date.now()
    // Any event means a transaction ended, which may have made callbacks final.
    this.tailAgain = true
    this.pending.push(event)
    // Events of one burst are read together: one statement per batch, not per event.
    if (this.pending.length === 1) this.chain = this.chain.then(nextTurn).then(() => this.dispatch())
  }

  private async dispatch(): Promise<void> {
    const batch = this.unread.length > 0 ? [...this.unread, ...this.pending] : this.pending
    this.pending = []
    this.unread = []
    const [callbacks, ...rows] = await Promise.allSettled([
      this.dispatchCallbacks(),
      ...ROW_KINDS.map((kind) => this.dispatchRows(kind, batch)),
    ])
    // The database is away (a restart, a failover): the position has not moved past what was not
    // handed out, so the next look (a doorbell, the tick, the listening connection's return)
    // reads on from it. Subscribers wait; none is ended, none misses a callback.
    if (callbacks?.status === 'rejected') {
      this.tailAgain = true
      this.options.log.warn(
        { err: callbacks.reason },
        'realtime: the log could not be read; reading on from the same position at the next look',
      )
    }
    const failed = new Set(ROW_KINDS.filter((_, n) => rows[n]?.status === 'rejected'))
    if (failed.size === 0) return
    this.unread = batch.filter((event) => failed.has(event.kind as RowKind))
    const reason = rows.find((outcome) => outcome.status === 'rejected')
    this.options.log.warn(
      { err: reason?.status === 'rejected' ? reason.reason : undefined, kinds: [...failed] },
      'realtime: changed rows could not be read; reading them again at the next look',
    )
  }

  private async dispatchCallbacks(): Promise<void> {
    if (!this.tailAgain) return
    this.tailAgain = false
    if (this.groups.notification.empty) {
      this.current = false
      return
    }
    await this.moveToEnd()
    for (;;) {
      const read = await logTail(this.options.database.db, this.position, TAIL_PAGE)
      // Handed out in a span linked to each callback's commit span (when tracing is on).
      if (read.rows.length > 0)
        this.handedOut(
          deliverySpan(
            read.rows.map((row) => row.traceparent),
            () => this.handOut(read.rows),
          ),
        )
      if (read.pending) this.retry.wakeIn(PENDING_RETRY_MS)
      if (read.rows.length < TAIL_PAGE) return
    }
  }

  private handOut(rows: readonly NotificationRow[]): Promise<void> | undefined {
    // The position moves past rows no filter matches too: one who joins later starts from here.
    const fresh = rows.filter((row) => comparePositions(row, this.position) > 0)
    const last = fresh.at(-1)
    if (!last) return
    this.position = { xid: last.xid, id: last.id }
    return this.groups.notification.handOut(fresh, notificationMatches, (row) => row, nextTurn)
  }

  /** After the log grew with nobody listening, live delivery starts again from its end. */
  private async moveToEnd(): Promise<void> {
    if (this.current) return
    const end = await logEnd(this.options.database.db)
    if (comparePositions(end, this.position) > 0) this.position = end
    this.current = true
  }

  // Every row stream alike (ROW_STREAMS): its changed rows read once per batch, matched once per distinct filter.
  private async dispatchRows<K extends RowKind>(kind: K, batch: readonly RealtimeEvent[]): Promise<void> {
    const groups: FilterGroups<StreamFilter<K>, StreamItem<K>> = this.groups[kind]
    if (groups.empty) return
    const stream = ROW_STREAMS[kind]
    const heard: readonly string[] = stream.hears ?? [kind]
    const events = batch.filter((event): event is EventOf<K> => heard.includes(event.kind))
    if (events.length === 0) return
    const rows = await stream.read(this.options.database.db, events)
    this.handedOut(
      groups.handOut(
        rows,
        (filter, row) => stream.matches(filter, row),
        (row) => stream.item(row),
        nextTurn,
      ),
    )
  }

  /**
   * A hand-out in parts goes on while the engine reads the next rows, which join it (see
   * {@link FilterGroups.handOut}): it is not waited for, only its failure told.
   */
  private handedOut(going: Promise<void> | undefined): void {
    going?.catch((error: unknown) => this.options.log.error({ err: error }, 'realtime: a hand-out failed'))
  }
}
