import type { FastifyBaseLogger } from 'fastify'
import type { Config } from '../../config/config.schema.js'
import type { Database } from '../../storage/database.client.js'
import { claimMissingRecordings, type MissingRecording } from '../../storage/graph/recording-missing.statements.js'
import { appendWebhookEvents, type NewWebhookEvent } from '../../storage/outbound/webhook.statements.js'
import { WakeScheduler } from '../wake.scheduler.js'

/** What {@link RecordingMissingWatch} is built from. */
export interface RecordingMissingWatchOptions {
  config: Pick<Config, 'archive' | 'webhooks'>
  database: Database
  log: Pick<FastifyBaseLogger, 'warn'>
  now?: (() => Date) | undefined
}

// Tasks decided in one transaction; a full batch runs again at once.
const BATCH = 200

/**
 * Looks for tasks that ended with `live_only` 0 and have no recording after `archive.graceMs`,
 * and tells each once as `recording.missing`. Time alone decides it, so it looks every so often
 * (a fraction of the grace, between half a second and half a minute). The decision and its event
 * are one transaction, and the table it is kept in takes each task once: every instance may look,
 * and each task is told once across them.
 */
export class RecordingMissingWatch {
  private readonly scheduler: WakeScheduler
  private readonly everyMs: number
  private readonly now: () => Date

  constructor(private readonly options: RecordingMissingWatchOptions) {
    this.now = options.now ?? (() => new Date())
    this.everyMs = Math.min(30_000, Math.max(500, Math.floor(options.config.archive.graceMs / 4)))
    this.scheduler = new WakeScheduler({
      run: () => this.pass(),
      onError: (error) => {
        options.log.warn({ err: error }, 'missing recordings could not be looked for; looking again later')
        return this.everyMs
      },
    })
  }

  start(): void {
    this.scheduler.wake()
  }

  stop(): Promise<void> {
    return this.scheduler.stop()
  }

  /** One look: the tasks it decided, their events written with the decision. */
  private async pass(): Promise<{ again: boolean; within: number }> {
    const { config, database } = this.options
    const at = this.now()
    const events = config.webhooks.endpoints.length > 0
    const claimed = await database.db.transaction(async (tx) => {
      const found = await claimMissingRecordings(tx, config.archive.graceMs, at, BATCH)
      if (events)
        await appendWebhookEvents(
          tx,
          found.map((missing) => missingEvent(missing, config.archive.graceMs, at)),
        )
      return found
    })
    return { again: claimed.length === BATCH, within: this.everyMs }
  }
}

const asDate = (ms: unknown) => (typeof ms === 'number' ? new Date(ms) : null)

/** `recording.missing` of a task: the task in the schema's names (its `id` and `taskId` added by the shape). */
export function missingEvent(
  { serviceCode, taskId, node }: MissingRecording,
  graceMs: number,
  at: Date,
): NewWebhookEvent {
  const task = node
    ? {
        status: node.status,
        endReason: node.endReason,
        userName: node.author,
        vsId: node.vsId,
        liveOnly: node.liveOnly,
        startedAt: asDate(node.startedAt),
        endedAt: asDate(node.endedAt),
        listed: node.listed,
      }
    : {}
  const reason = `ended with live_only 0 and no recording after ${graceMs} ms`
  return { type: 'recording.missing', serviceCode, taskId, occurredAt: at, facts: { ...task, graceMs, reason } }
}
