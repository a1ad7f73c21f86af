import { z } from 'zod'

const HOUR = 3_600_000
const DAY = 24 * HOUR

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: HOUR, d: DAY } as const

/** A duration setting: milliseconds, or a number with a unit ("48h", "30d", "90m", "5s", "250ms"). */
export const duration = (min: number, max: number, fallback: number) =>
  z
    .union([
      z.int(),
      z
        .string()
        .regex(/^\d{1,9}(ms|s|m|h|d)$/, {
          error: (issue) =>
            `${JSON.stringify(issue.input)} is not a duration: write milliseconds or a number with a unit, ` +
            'as "20s", "2m", "48h" or "250ms"',
        })
        .transform((text) => {
          const [, count, unit] = /^(\d+)(ms|s|m|h|d)$/.exec(text) as unknown as [string, string, keyof typeof UNIT_MS]
          return Number(count) * UNIT_MS[unit]
        }),
    ])
    .pipe(z.int().min(min, `must be at least ${min} ms`).max(max, `must be at most ${max} ms`))
    .default(fallback)

/** `history`: how long samples and their rollups are kept. */
export const historySchema = z.strictObject({
  /** Raw samples (one per listed task per answer) older than this go, a whole partition at a time. */
  rawRetention: duration(2 * HOUR, 90 * DAY, 48 * HOUR),
  /** Minute rollups older than this are pruned. */
  minuteRetention: duration(DAY, 400 * DAY, 30 * DAY),
  /** Hour rollups older than this are pruned. */
  hourRetention: duration(DAY, 3650 * DAY, 400 * DAY),
  /** Between two prunes of the history; 0 turns the scheduled prune off. */
  pruneIntervalMs: z
    .int()
    .min(0)
    .max(DAY)
    .default(10 * 60_000),
})

/** `reconcile`: push (callbacks) against poll (the task list). */
export const reconcileSchema = z.strictObject({
  /**
   * How long a listed task may wait for its type 0, and a vanished one for its type 1; by default two poll intervals
   * and 10 s.
   */
  graceMs: z.int().min(0).max(DAY).optional(),
})

export type HistoryConfig = z.output<typeof historySchema>
export type ReconcileConfig = z.output<typeof reconcileSchema>

/** The grace of the reconciliation: as configured, else two poll intervals and 10 s. */
export function reconcileGraceMs(config: { reconcile: ReconcileConfig; upstream: { pollIntervalMs: number } }): number {
  return config.reconcile.graceMs ?? 2 * config.upstream.pollIntervalMs + 10_000
}
