import type { FastifyBaseLogger } from 'fastify'
import type { TaskNode } from '../../fold/graph.model.js'
import { deriveTask } from '../../fold/task.derive.js'
import type { Database } from '../../storage/database.client.js'
import { sampledTasks } from '../../storage/history/audience.queries.js'
import { type TaskQuery, taskMatches } from '../../storage/graph/task.queries.js'
import { SubscriptionQueue } from '../realtime/subscription.queue.js'
import { SAMPLE_CHANNEL } from '../../model/notify.channels.js'
import type { ChannelListener } from '../channel.listener.js'

// Still exported here for the readers not yet on the one listener (work/alerts/incident.watch.ts).
export { SAMPLE_CHANNEL }

/** A service code's answer taken at `at` was sampled: its samples are in `task_samples`. */
export interface SampleEvent {
  serviceCode: string
  at: number
}

/** The NOTIFY payload of a sample event (a service code is far below NOTIFY's 8000 bytes). */
export function encodeSampleEvent(event: SampleEvent): string {
  return JSON.stringify({ s: [event.serviceCode, event.at] })
}

/** The sample event in a payload, or undefined for anything else. */
export function decodeSampleEvent(payload: string): SampleEvent | undefined {
  try {
    const { s } = JSON.parse(payload) as { s?: unknown }
    if (Array.isArray(s) && s.length === 2 && typeof s[0] === 'string' && Number.isFinite(s[1])) return { serviceCode: s[0], at: s[1] as number }
  } catch {
    // not ours
  }
  return undefined
}

/** One task's sample at one answer, as `metricsSampled` hands it out. */
export interface TaskSampleEvent {
  task: TaskNode
  at: Date
  viewers: number
  inputBitrate: number | null
  outputBitrate: number | null
}

interface Group {
  filter: TaskQuery
  queues: Set<SubscriptionQueue<TaskSampleEvent>>
}

/**
 * Hands every sampled answer's samples, one event per task, to the `metricsSampled` subscribers
 * of this process, whichever instance wrote them: the writer announces the answer (service
 * code, time) on a channel of its own, and each instance reads those samples once per answer and
 * matches them once per distinct filter.
 */
export class SampleHub {
  private readonly groups = new Map<string, Group>()
  private off: (() => void) | undefined
  private chain: Promise<void> = Promise.resolve()

  constructor(
    private readonly options: {
      database: Database
      channels: Pick<ChannelListener, 'on'>
      log: Pick<FastifyBaseLogger, 'error'>
      subscriberBuffer: number
    },
  ) {}

  start(): void {
    this.off = this.options.channels.on(SAMPLE_CHANNEL, (payload) => {
      const event = decodeSampleEvent(payload)
      if (event && this.groups.size > 0) this.chain = this.chain.then(() => this.dispatch(event))
    })
  }

  async stop(): Promise<void> {
    this.off?.()
    this.off = undefined
    await this.chain
    for (const group of this.groups.values()) for (const queue of group.queues) queue.close()
  }

  /** How many `metricsSampled` subscriptions are open. */
  get size(): number {
    return [...this.groups.values()].reduce((n, group) => n + group.queues.size, 0)
  }

  /** A queue of the samples from now on of the tasks that match `filter` (its scope included). */
  subscribe(filter: TaskQuery, onOverflow: () => void): SubscriptionQueue<TaskSampleEvent> {
    const key = JSON.stringify(filter, Object.keys(filter).sort())
    let group = this.groups.get(key)
    if (!group) this.groups.set(key, (group = { filter, queues: new Set() }))
    const joined = group
    const queue: SubscriptionQueue<TaskSampleEvent> = new SubscriptionQueue<TaskSampleEvent>(this.options.subscriberBuffer, onOverflow, () => {
      joined.queues.delete(queue)
      if (joined.queues.size === 0) this.groups.delete(key)
    })
    joined.queues.add(queue)
    return queue
  }

  private async dispatch(event: SampleEvent): Promise<void> {
    try {
      for (const row of await sampledTasks(this.options.database.db, event.serviceCode, new Date(event.at))) {
        let sample: TaskSampleEvent | undefined
        for (const group of this.groups.values()) {
          if (!taskMatches(group.filter, row.task)) continue
          sample ??= { task: deriveTask(row.task.state), at: row.at, viewers: row.viewers, inputBitrate: row.inputBitrate, outputBitrate: row.outputBitrate }
          for (const queue of group.queues) queue.push(sample)
        }
      }
    } catch (error) {
      this.options.log.error({ err: error }, 'samples could not be read; ending metricsSampled subscriptions')
      for (const group of this.groups.values()) for (const queue of group.queues) queue.fail(new Error('Samples could not be delivered; subscribe again.'))
    }
  }
}
