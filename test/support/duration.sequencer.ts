import { readFileSync } from 'node:fs'
import { relative } from 'node:path'
import { BaseSequencer, type TestSpecification } from 'vitest/node'

/**
 * Longest files first, so that two workers end together. Vitest's own order is by the last run's
 * durations, but a file skipped on PGlite (the server-only ones: an outage, the workers, the
 * leases) leaves a duration near zero in that cache, and the next stage on the server then starts
 * its longest files last: a minute and more with one worker idle. `test.durations.json` holds what
 * each file took on the server (its refresh: `node test/support/durations.update.mjs REPORT.json`
 * from the JSON report of a server run); a file it does not know is weighed as the median.
 */
const known: Record<string, number> = JSON.parse(
  readFileSync(new URL('./test.durations.json', import.meta.url), 'utf8'),
)

export default class DurationSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root
    const weights = Object.values(known).sort((a, b) => a - b)
    const median = weights[Math.floor(weights.length / 2)] ?? 0
    const weight = (file: TestSpecification): number => {
      const path = relative(root, file.moduleId)
      const cached = this.ctx.cache.getFileTestResults(`${file.project.name}:${path}`)?.duration ?? 0
      return Math.max(known[path] ?? median, cached)
    }
    return [...files].sort((a, b) => weight(b) - weight(a))
  }
}
