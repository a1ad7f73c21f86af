import type { FastifyBaseLogger } from 'fastify'
import type { TaskNode } from '../../fold/graph.model.js'
import { deriveTask } from '../../fold/task.derive.js'
import type { Database } from '../../storage/database.client.js'
import { sampledTasks } from '../../storage/history/audience.queries.js'
import { type TaskQuery, taskMatches } from '../../storage/graph/task.queries.js'
import type { SubscriptionQueue } from '../realtime/subscription.queue.js'
import { FilterGroups } from '../realtime/filter.groups.js'
import { WakeScheduler } from '../wake.scheduler.js'
import { SAMPLE_CHANNEL } from '../../model/notify.channels.js'
import type { ChannelListener } from '../channel.listener.js'

// Still exported here for the readers not yet on the one listener (work/alerts/incident.watch.ts).

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
    if (Array.isArray(s) && s.length === 2 && typeof s[0] === 'string' && Number.isFinite(s[1]))
      return { serviceCode: s[0], at: s[1] as number }
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

// How soon samples that could not be read are read again (the database is away).
const RETRY_MS = 1000

/**
 * Hands every sampled answer's samples, one event per task, to the `metricsSampled` subscribers
 * of this process, whichever instance wrote them: the writer announces the answer (service
 * code, time) on a channel of its own, and each instance reads those samples once per answer and
 * matches them once per distinct filter ({@link FilterGroups}, as the event hub does). The failure
 * policy is the event hub's too: an answer whose samples could not be read is read again a
 * second later, in order; subscribers wait, and none is ended.
 */
export class SampleHub {
  private readonly groups: FilterGroups<TaskQuery, TaskSampleEvent>
  private off: (() => void) | undefined
  /** Answers announced and not handed out yet, oldest first. */
  private unread: SampleEvent[] = []
  private readonly reader: WakeScheduler

  constructor(
    private readonly options: {
      database: Database
      channels: Pick<ChannelListener, 'on'>
      log: Pick<FastifyBaseLogger, 'warn'>
      subscriberBuffer: number
    },
  ) {
    this.groups = new FilterGroups(options.subscriberBuffer)
    this.reader = new WakeScheduler({
      run: () => this.readUnread(),
      onError: (error) => {
        options.log.warn({ err: error }, 'samples could not be read; reading them again in a second')
        return RETRY_MS
      },
    })
  }

  start(): void {
    this.reader.restart()
    this.off = this.options.channels.on(SAMPLE_CHANNEL, (payload) => {
      const event = decodeSampleEvent(payload)
      if (!event || this.groups.empty) return
      this.unread.push(event)
      this.reader.wake()
    })
  }

  async stop(): Promise<void> {
    this.off?.()
    this.off = undefined
    await this.reader.stop()
    this.groups.close()
  }

  /** How many `metricsSampled` subscriptions are open. */
  get size(): number {
    return this.groups.size
  }

  /** A queue of the samples from now on of the tasks that match `filter` (its scope included). */
  subscribe(filter: TaskQuery): SubscriptionQueue<TaskSampleEvent> {
    return this.groups.join(filter)
  }

  // An answer leaves the line only once handed out: a failed read keeps it first, for the retry.
  private async readUnread(): Promise<undefined> {
    for (let event = this.unread[0]; event; event = this.unread[0]) {
      const rows = this.groups.empty
        ? []
        : await sampledTasks(this.options.database.db, event.serviceCode, new Date(event.at))
      this.unread.shift()
      for (const row of rows) {
        this.groups.handOut(
          (filter) => taskMatches(filter, row.task),
          () => ({
            task: deriveTask(row.task.state),
            at: row.at,
            viewers: row.viewers,
            inputBitrate: row.inputBitrate,
            outputBitrate: row.outputBitrate,
          }),
        )
      }
    }
    return undefined
  }
}
