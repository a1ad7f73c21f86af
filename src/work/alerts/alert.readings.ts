import type { AlertRule } from '../../config/alerts.schema.js'
import type { Config } from '../../config/config.schema.js'
import type { Readings, ServiceReading, TaskReading } from '../../fold/alert.evaluator.js'
import { taskHealth } from '../../fold/task.health.js'
import { missingCallbacksByCode, taskSignals } from '../../storage/alerts/signal.queries.js'
import type { Database } from '../../storage/database.client.js'
import { judgeUpstream, readUpstreamStatus, staleAfterMs } from '../../storage/history/upstream-status.statements.js'

/** What {@link readSignals} reads with. */
export interface SignalSources {
  config: Pick<Config, 'services' | 'upstream'>
  database: Database
  /** The rules a pass evaluates: the codes they name are read too. */
  rules: readonly AlertRule[]
}

// What the reconciliation's count of forgotten callbacks looks back over.
const HOUR = 3_600_000

/**
 * What one pass of the alert rules reads: every live task of the configured and named codes with
 * its latest sample, and each code's audience, freshness and forgotten callbacks. `startedAt` is
 * when the reading process began to look: a code never answered is stale only once it has waited
 * as long as a stale list.
 */
export async function readSignals(options: SignalSources, now: Date, startedAt: number): Promise<Readings> {
  const db = options.database.db
  const staleMs = staleAfterMs(options.config.upstream)
  const { services, upstream } = options.config
  const configured = services.map((service) => service.serviceCode)
  const named = options.rules.flatMap((rule) => (rule.serviceCodes === '*' ? configured : rule.serviceCodes))
  const codes = [...new Set([...configured, ...named])]
  // The codes whose task list is polled: only they can go stale (as `upstream(code).stale` says).
  const polled =
    upstream.pollIntervalMs > 0
      ? services
          .filter((service) => service.baseUrl && service.secrets.length > 0)
          .map((service) => service.serviceCode)
      : []
  const [rows, missing, statuses] = await Promise.all([
    taskSignals(db, codes),
    missingCallbacksByCode(db, new Date(now.getTime() - HOUR)),
    readUpstreamStatus(db, polled),
  ])
  // A code never answered is stale only once this process has waited as long as a stale list: a start is no fault.
  const waited = now.getTime() - startedAt >= staleMs
  const stale = new Set(
    polled.filter(
      (code) => judgeUpstream(statuses.get(code), now, staleMs).stale && (waited || statuses.get(code)?.lastSuccessAt),
    ),
  )
  const tasks: TaskReading[] = rows.map((row) => {
    const view = taskHealth({
      status: row.status,
      listed: row.listed,
      endedAt: null,
      waitingSince: null,
      sampled: row.sampled ? { health: row.sampled.health, since: row.sampled.since.getTime() } : undefined,
      stale: stale.has(row.serviceCode),
    })
    return {
      serviceCode: row.serviceCode,
      taskId: row.taskId,
      health: view.state,
      healthSince: view.since,
      viewers: row.viewers,
      inputBitrate: row.inputBitrate,
    }
  })
  const readings: ServiceReading[] = codes.map((serviceCode) => {
    const lastSuccess = statuses.get(serviceCode)?.lastSuccessAt?.getTime()
    // A code's audience is known from a fresh task list answer only: none yet, or a stale one, says nothing.
    const answered = lastSuccess !== undefined && !stale.has(serviceCode)
    return {
      serviceCode,
      viewers: answered
        ? tasks.reduce((sum, task) => sum + (task.serviceCode === serviceCode ? (task.viewers ?? 0) : 0), 0)
        : null,
      stale: stale.has(serviceCode),
      staleSince: stale.has(serviceCode) ? (lastSuccess ?? startedAt) + staleMs : null,
      callbacksMissing: missing.get(serviceCode) ?? 0,
    }
  })
  return { tasks, services: readings }
}
