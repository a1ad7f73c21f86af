import { sql } from 'drizzle-orm'
import type { SampledHealth } from '../../fold/task.health.js'
import { type Db, resultRows } from '../database.client.js'

/** What the alert rules read of one task that is not ended: its life, its latest sample. */
export interface TaskSignalRow {
  serviceCode: string
  taskId: string
  status: 'LIVE' | 'WAITING_RECONNECT'
  listed: boolean
  /** Its sampled health and since when; null before its first sample. */
  sampled: { health: SampledHealth; since: Date } | null
  /** At its latest sample, when the latest answer listed it. */
  viewers: number | null
  /** Bits per second at its latest sample; null on a first sample or a counter that went down. */
  inputBitrate: number | null
}

/**
 * Every task of these codes that is live or waiting to reconnect, with its latest sample: one
 * statement a pass, read off the status index and the live rows' keys (the latest sample is the
 * one at `task_live.at`, found by its own index).
 */
export async function taskSignals(db: Db, serviceCodes: readonly string[]): Promise<TaskSignalRow[]> {
  if (serviceCodes.length === 0) return []
  const rows = resultRows<Record<string, unknown>>(
    await db.execute(sql`select t.service_code, t.task_id, t.status, t.listed, l.health, l.health_since, l.listed as
      sampled_listed, l.viewers, s.input_rate
      from tasks t
      left join task_live l on l.service_code = t.service_code and l.task_id = t.task_id
      left join task_samples s on s.service_code = t.service_code and s.task_id = t.task_id and s.at = l.at
      where t.status in ('LIVE', 'WAITING_RECONNECT') and t.service_code in (${sql.join(
        serviceCodes.map((code) => sql`${code}`),
        sql`, `,
      )})`),
  )
  return rows.map((row) => ({
    serviceCode: row.service_code as string,
    taskId: row.task_id as string,
    status: row.status as TaskSignalRow['status'],
    listed: row.listed as boolean,
    sampled:
      row.health == null ? null : { health: row.health as SampledHealth, since: new Date(row.health_since as string) },
    viewers: row.sampled_listed === true && row.viewers != null ? Number(row.viewers) : null,
    inputBitrate: row.input_rate == null ? null : Number(row.input_rate),
  }))
}

/**
 * Per service code, the tasks found since `since` whose start or end the cloud never sent (the
 * reconciliation's `missingStart + missingEnd`); codes with none are absent.
 */
export async function missingCallbacksByCode(db: Db, since: Date): Promise<Map<string, number>> {
  const after = since.toISOString()
  const rows = resultRows<{ service_code: string; n: unknown }>(
    await db.execute(sql`select service_code,
        count(*) filter (where missing_start_at >= ${after}::timestamptz) + count(*) filter (where missing_end_at >=
          ${after}::timestamptz) as n
      from task_live where missing_start_at >= ${after}::timestamptz or missing_end_at >= ${after}::timestamptz
      group by service_code`),
  )
  return new Map(rows.map((row) => [row.service_code, Number(row.n)]))
}
