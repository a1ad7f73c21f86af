import type { FastifyBaseLogger } from 'fastify'
import type { Database } from '../storage/database.client.js'
import { type NotificationCriteria, type NotificationRow, notificationMatches, notificationsByIds } from '../storage/notification.queries.js'
import { type TaskQuery, taskMatches, tasksByKeys } from '../storage/task.queries.js'
import type { TaskNode } from '../fold/graph.model.js'
import { deriveTask } from '../fold/task.derive.js'
import { decodeEvent, EVENT_CHANNEL, type RealtimeEvent } from '../model/event.codec.js'
import { SubscriptionQueue } from './subscription.queue.js'

/** What {@link EventHub} is built from. */
export interface HubOptions {
  database: Database
  log: Pick<FastifyBaseLogger, 'warn' | 'error'>
  /** How many undelivered events one subscriber may have before it is cut off. */
  subscriberBuffer: number
}

interface Group<F, T> {
  filter: F
  queues: Set<SubscriptionQueue<T>>
}

/**
 * The one listener of this process on the event channel. Each event is read from the database
 * once and matched once per distinct filter, then handed to every subscriber with that filter:
 * the cost of an event grows with the number of distinct filters, not of subscribers.
 */
export class EventHub {
  private readonly notificationGroups = new Map<string, Group<NotificationCriteria, NotificationRow>>()
  private readonly taskGroups = new Map<string, Group<TaskQuery, TaskNode>>()
  private pending: RealtimeEvent[] = []
  // Batches are handled one after another, so subscribers see events in commit order.
  private chain: Promise<void> = Promise.resolve()
  private unlisten: (() => Promise<void>) | undefined

  constructor(private readonly options: HubOptions) {}

  /** Starts listening; events committed before this are not seen (subscribers replay them). */
  async start(): Promise<void> {
    this.unlisten = await this.options.database.listen(EVENT_CHANNEL, (payload) => this.receive(payload))
  }

  /** Stops listening and ends every subscription. */
  async stop(): Promise<void> {
    await this.unlisten?.()
    this.unlisten = undefined
    await this.chain
    for (const group of [...this.notificationGroups.values(), ...this.taskGroups.values()]) {
      for (const queue of group.queues) queue.close()
    }
  }

  /** How many subscriptions are open, of each kind. */
  get subscriptions(): { notifications: number; tasks: number } {
    const count = (groups: Iterable<{ queues: { size: number } }>) => [...groups].reduce((n, group) => n + group.queues.size, 0)
    return { notifications: count(this.notificationGroups.values()), tasks: count(this.taskGroups.values()) }
  }

  /** A queue of the callbacks committed from now on that match `criteria`. */
  subscribeNotifications(criteria: NotificationCriteria, onOverflow: () => void): SubscriptionQueue<NotificationRow> {
    return this.join(this.notificationGroups, criteria, onOverflow)
  }

  /** A queue of the tasks, re-folded, that change from now on and match `filter` after the change. */
  subscribeTasks(filter: TaskQuery, onOverflow: () => void): SubscriptionQueue<TaskNode> {
    return this.join(this.taskGroups, filter, onOverflow)
  }

  private join<F, T>(groups: Map<string, Group<F, T>>, filter: F, onOverflow: () => void): SubscriptionQueue<T> {
    const key = JSON.stringify(filter, Object.keys(filter as object).sort())
    let group = groups.get(key)
    if (!group) {
      group = { filter, queues: new Set() }
      groups.set(key, group)
    }
    const joined = group
    const queue: SubscriptionQueue<T> = new SubscriptionQueue<T>(this.options.subscriberBuffer, onOverflow, () => {
      joined.queues.delete(queue)
      if (joined.queues.size === 0) groups.delete(key)
    })
    joined.queues.add(queue)
    return queue
  }

  private receive(payload: string): void {
    const event = decodeEvent(payload)
    if (!event) return
    this.pending.push(event)
    // Events of one burst are read together: one statement per batch, not per event.
    if (this.pending.length === 1) this.chain = this.chain.then(() => new Promise((resolve) => setImmediate(resolve))).then(() => this.dispatch())
  }

  private async dispatch(): Promise<void> {
    const batch = this.pending
    this.pending = []
    try {
      await Promise.all([this.dispatchCallbacks(batch), this.dispatchTasks(batch)])
    } catch (error) {
      // Subscribers would silently miss these events: end their subscriptions with an error,
      // so they resubscribe from their last cursor and replay what they missed.
      this.options.log.error({ err: error }, 'realtime events could not be read; ending subscriptions')
      for (const group of [...this.notificationGroups.values(), ...this.taskGroups.values()]) {
        for (const queue of group.queues) queue.fail(new Error('Events could not be delivered; subscribe again (with your last cursor).'))
      }
    }
  }

  private async dispatchCallbacks(batch: RealtimeEvent[]): Promise<void> {
    if (this.notificationGroups.size === 0) return
    const ids = batch.flatMap((event) => (event.kind === 'callback' ? [event.id] : []))
    if (ids.length === 0) return
    const byId = new Map((await notificationsByIds(this.options.database.db, ids)).map((row) => [row.id, row]))
    for (const id of ids) {
      const row = byId.get(id)
      if (!row) continue
      for (const group of this.notificationGroups.values()) {
        if (!notificationMatches(group.filter, row)) continue
        for (const queue of group.queues) queue.push(row)
      }
    }
  }

  private async dispatchTasks(batch: RealtimeEvent[]): Promise<void> {
    if (this.taskGroups.size === 0) return
    const keys = new Map<string, { serviceCode: string; taskId: string }>()
    for (const event of batch) if (event.kind === 'task') keys.set(JSON.stringify([event.serviceCode, event.taskId]), event)
    if (keys.size === 0) return
    for (const row of await tasksByKeys(this.options.database.db, [...keys.values()])) {
      const node = deriveTask(row.state)
      for (const group of this.taskGroups.values()) {
        if (!taskMatches(group.filter, row)) continue
        for (const queue of group.queues) queue.push(node)
      }
    }
  }
}
