// Writes test/support/test.durations.json from a vitest JSON report (the one `.ci/run` writes for
// its server stage, or `npm test -- --reporter=json --outputFile=REPORT.json`): milliseconds per
// file, rounded, which the duration sequencer uses to start the longest files first.
import { readFileSync, writeFileSync } from 'node:fs'
import { relative } from 'node:path'

const [reportPath] = process.argv.slice(2)
if (!reportPath) {
  console.error('usage: node test/support/durations.update.mjs REPORT.json')
  process.exit(1)
}
const root = new URL('../..', import.meta.url).pathname
const report = JSON.parse(readFileSync(reportPath, 'utf8'))
const durations = Object.fromEntries(
  report.testResults
    .map((result) => [relative(root, result.name), Math.round(result.endTime - result.startTime)])
    .sort(([a], [b]) => a.localeCompare(b)),
)
writeFileSync(new URL('./test.durations.json', import.meta.url), `${JSON.stringify(durations, null, 2)}\n`)
console.log(`${Object.keys(durations).length} files`)
