import type { FastifyBaseLogger } from 'fastify'
import type { Database } from '../../storage/database.client.js'
import { comparePositions, type LogPosition } from '../../model/log.position.js'
import {
  logTail,
  type NotificationCriteria,
  type NotificationRow,
  notificationMatches,
} from '../../storage/notification.queries.js'
import { logEnd } from '../../storage/log.kernel.js'
import { type TaskQuery, taskMatches, tasksByKeys } from '../../storage/graph/task.queries.js'
import type { TaskNode } from '../../fold/graph.model.js'
import { deriveTask } from '../../fold/task.derive.js'
import { decodeEvent, LOG_GREW, type RealtimeEvent } from '../../model/event.codec.js'
import { EVENT_CHANNEL } from '../../model/notify.channels.js'
import type { ChannelListener } from '../channel.listener.js'
import { deliverySpan } from '../tracing.spans.js'
import type { SubscriptionQueue } from './subscription.queue.js'
import { FilterGroups } from './filter.groups.js'
import { WakeScheduler } from '../wake.scheduler.js'
import { type ActionCriteria, actionMatches, actionsByIds } from '../../storage/outbound/action.queries.js'
import type { ActionRow } from '../../storage/tables/action.table.js'
import { type IncidentCriteria, incidentMatches, incidentsByIds } from '../../storage/alerts/incident.queries.js'
import type { IncidentRow } from '../../storage/tables/incident.table.js'

/** What {@link EventHub} is built from. */
export interface HubOptions {
  database: Database
  /** The process's listener: the hub hears the event channel through it. */
  channels: Pick<ChannelListener, 'on' | 'listening'>
  log: Pick<FastifyBaseLogger, 'warn' | 'error' | 'info'>
  /** How many undelivered events one subscriber may have before it is cut off. */
  subscriberBuffer: number
  /**
   * How often the hub looks for itself at the log's end while subscriptions are open and no
   * doorbell came: a missed doorbell costs at most this.
   */
  tickMs?: number
}

type RowKind = 'action' | 'incident'
type ReadRows<R> = (db: Database['db'], ids: number[]) => Promise<R[]>
type Matches<F, R> = (filter: F, row: R) => boolean

// Callbacks read per statement when the log is tailed.
const TAIL_PAGE = 1000
// How soon to look again when committed callbacks wait behind an older running transaction.
const PENDING_RETRY_MS = 10
const TICK_MS = 1000

/**
 * The one reader of the log in this process for its subscriptions. The doorbell (heard through
 * the process's {@link ChannelListener}) says the log grew; the hub then reads it from its own
 * position, in log order, only as far as it is final, so every subscriber sees every callback once and in the one
 * order a
 * resuming subscriber replays. Each callback is read once and matched once per distinct filter,
 * then handed to every subscriber with that filter: the cost of an event grows with the number
 * of distinct filters, not of subscribers. While no notification subscription is open the log is
 * not read at all (every instance would read every callback for nobody): the hub only notes that
 * its position is behind, and moves it to the log's end before it hands anything out again.
 */
export class EventHub {
  private position: LogPosition = { xid: '0', id: 0 }
  private tailAgain = false
  /** Whether `position` is where live delivery stands: false once the log grew while nobody listened. */
  private current = true
  // A look again soon, when committed callbacks wait behind an older running transaction.
  private readonly retry = new WakeScheduler({ run: () => void this.receive(LOG_GREW) })
  private readonly ticker: WakeScheduler
  private readonly notificationGroups: FilterGroups<NotificationCriteria, NotificationRow>
  private readonly taskGroups: FilterGroups<TaskQuery, TaskNode>
  private readonly actionGroups: FilterGroups<ActionCriteria, ActionRow>
  private readonly incidentGroups: FilterGroups<IncidentCriteria, IncidentRow>
  private pending: RealtimeEvent[] = []
  // Batches are handled one after another, so subscribers see events in commit order.
  private chain: Promise<void> = Promise.resolve()
  private off: (() => void) | undefined
  private lastDoorbellAt = 0
  // Task changes whose reading failed: read again at the next dispatch rather than lost.
  private unreadTasks: RealtimeEvent[] = []
  private readonly tickMs: number

  constructor(private readonly options: HubOptions) {
    this.tickMs = options.tickMs ?? TICK_MS
    this.notificationGroups = new FilterGroups(options.subscriberBuffer)
    this.taskGroups = new FilterGroups(options.subscriberBuffer)
    this.actionGroups = new FilterGroups(options.subscriberBuffer)
    this.incidentGroups = new FilterGroups(options.subscriberBuffer)
    this.ticker = new WakeScheduler({
      run: () => {
        this.tick()
        return { within: this.tickMs }
      },
    })
  }

  /** Starts listening; callbacks final before this are not handed out (subscribers replay them). */
  async start(): Promise<void> {
    // Each time the channel is heard again, the hub reads on from its own position before it
    // waits for the next doorbell: doorbells rung while the listener was deaf are lost, the log is not.
    this.off = this.options.channels.on(
      EVENT_CHANNEL,
      (payload) => this.receive(payload),
      () => this.receive(LOG_GREW),
    )
    this.position = await logEnd(this.options.database.db)
    this.ticker.wakeIn(this.tickMs)
  }

  /** Whether the hub hears the event channel (`/readyz`): false while the listening connection is lost. */
  get listening(): boolean {
    return this.options.channels.listening
  }

  private tick(): void {
    const open = !(
      this.notificationGroups.empty &&
      this.taskGroups.empty &&
      this.actionGroups.empty &&
      this.incidentGroups.empty
    )
    if ((open || this.unreadTasks.length > 0) && Date.now() - this.lastDoorbellAt >= this.tickMs) this.receive(LOG_GREW)
  }

  /** Where live delivery stands: every callback up to here has been handed out. */
  get livePosition(): LogPosition {
    return this.position
  }

  /** Stops listening and ends every subscription. */
  async stop(): Promise<void> {
    await Promise.all([this.retry.stop(), this.ticker.stop()])
    this.off?.()
    this.off = undefined
    await this.chain
    for (const groups of [this.notificationGroups, this.taskGroups, this.actionGroups, this.incidentGroups])
      groups.close()
  }

  /** How many subscriptions are open, of each kind. */
  get subscriptions(): { notifications: number; tasks: number; actions: number; incidents: number } {
    return {
      notifications: this.notificationGroups.size,
      tasks: this.taskGroups.size,
      actions: this.actionGroups.size,
      incidents: this.incidentGroups.size,
    }
  }

  /** A queue of the callbacks committed from now on that match `criteria`. */
  subscribeNotifications(criteria: NotificationCriteria): SubscriptionQueue<NotificationRow> {
    return this.notificationGroups.join(criteria)
  }

  /**
   * Resolves once live delivery to the subscriptions open now goes on from the log's end: at once
   * while the hub reads the log, else after one look at where the log ends. A subscription
   * replays from its cursor only after this, so nothing falls between its replay and its live rows.
   */
  whenLive(): Promise<void> {
    if (this.current) return Promise.resolve()
    const moved = this.chain.then(() => this.moveToEnd())
    this.chain = moved.catch(() => {})
    return moved
  }

  /** A queue of the tasks, re-folded, that change from now on and match `filter` after the change. */
  subscribeTasks(filter: TaskQuery): SubscriptionQueue<TaskNode> {
    return this.taskGroups.join(filter)
  }

  /** A queue of the actions, as stored now, recorded or ended from now on that match `criteria`. */
  subscribeActions(criteria: ActionCriteria): SubscriptionQueue<ActionRow> {
    return this.actionGroups.join(criteria)
  }

  /** A queue of the incidents, as stored now, opened, acknowledged or resolved from now on that match `criteria`. */
  subscribeIncidents(criteria: IncidentCriteria): SubscriptionQueue<IncidentRow> {
    return this.incidentGroups.join(criteria)
  }

  private receive(payload: string): void {
    const event = decodeEvent(payload)
    if (!event) return
    this.lastDoorbellAt = Date.now()
    // Any event means a transaction ended, which may have made callbacks final.
    this.tailAgain = true
    this.pending.push(event)
    // Events of one burst are read together: one statement per batch, not per event.
    if (this.pending.length === 1)
      this.chain = this.chain.then(() => new Promise((resolve) => setImmediate(resolve))).then(() => this.dispatch())
  }

  private async dispatch(): Promise<void> {
    const batch = this.unreadTasks.length > 0 ? [...this.unreadTasks, ...this.pending] : this.pending
    this.pending = []
    this.unreadTasks = []
    const actions = this.dispatchRows(batch, 'action', this.actionGroups, actionsByIds, actionMatches)
    const incidents = this.dispatchRows(batch, 'incident', this.incidentGroups, incidentsByIds, incidentMatches)
    const [callbacks, tasks] = await Promise.allSettled([
      this.dispatchCallbacks(),
      Promise.all([this.dispatchTasks(batch), actions, incidents]),
    ])
    // The database is away (a restart, a failover): the position has not moved past what was not
    // handed out, so the next look (a doorbell, the tick, the listening connection's return)
    // reads on from it. Subscribers wait; none is ended, none misses a callback.
    if (callbacks.status === 'rejected') {
      this.tailAgain = true
      this.options.log.warn(
        { err: callbacks.reason },
        'realtime: the log could not be read; reading on from the same position at the next look',
      )
    }
    if (tasks.status === 'rejected') {
      this.unreadTasks = batch.filter((event) => event.kind !== 'log')
      this.options.log.warn(
        { err: tasks.reason },
        'realtime: changed tasks or actions could not be read; reading them again at the next look',
      )
    }
  }

  private async dispatchCallbacks(): Promise<void> {
    if (!this.tailAgain) return
    this.tailAgain = false
    if (this.notificationGroups.empty) {
      this.current = false
      return
    }
    await this.moveToEnd()
    for (;;) {
      const read = await logTail(this.options.database.db, this.position, TAIL_PAGE)
      // Handed out in a span linked to each callback's commit span (when tracing is on).
      if (read.rows.length > 0)
        deliverySpan(
          read.rows.map((row) => row.traceparent),
          () => this.handOut(read.rows),
        )
      if (read.pending) this.retryTail()
      if (read.rows.length < TAIL_PAGE) return
    }
  }

  private handOut(rows: readonly NotificationRow[]): void {
    for (const row of rows) {
      // The position moves past rows no filter matches too: one who joins later starts from here.
      if (comparePositions(row, this.position) <= 0) continue
      this.position = { xid: row.xid, id: row.id }
      this.notificationGroups.handOut(
        (filter) => notificationMatches(filter, row),
        () => row,
      )
    }
  }

  /** After the log grew with nobody listening, live delivery starts again from its end. */
  private async moveToEnd(): Promise<void> {
    if (this.current) return
    const end = await logEnd(this.options.database.db)
    if (comparePositions(end, this.position) > 0) this.position = end
    this.current = true
  }

  private retryTail(): void {
    this.retry.wakeIn(PENDING_RETRY_MS)
  }

  private async dispatchTasks(batch: RealtimeEvent[]): Promise<void> {
    if (this.taskGroups.empty) return
    const keys = new Map<string, { serviceCode: string; taskId: string }>()
    for (const event of batch)
      if (event.kind === 'task') keys.set(JSON.stringify([event.serviceCode, event.taskId]), event)
    if (keys.size === 0) return
    for (const row of await tasksByKeys(this.options.database.db, [...keys.values()])) {
      this.taskGroups.handOut(
        (filter) => taskMatches(filter, row),
        () => deriveTask(row.state),
      )
    }
  }

  // Actions and incidents alike: each changed row read once per batch, matched once per distinct filter.
  private async dispatchRows<F extends object, R extends { id: number }>(
    batch: RealtimeEvent[],
    kind: RowKind,
    groups: FilterGroups<F, R>,
    read: ReadRows<R>,
    matches: Matches<F, R>,
  ): Promise<void> {
    if (groups.empty) return
    const ids = [...new Set(batch.flatMap((event) => (event.kind === kind ? [event.id] : [])))]
    if (ids.length === 0) return
    for (const row of (await read(this.options.database.db, ids)).sort((a, b) => a.id - b.id)) {
      groups.handOut(
        (filter) => matches(filter, row),
        () => row,
      )
    }
  }
}
