import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { type BenchSection, sectionMarkdown, type TargetCheck } from './bench.report.js'

/**
 * The bench's results per Node: each run writes its own Node major's file (`RESULTS.node24.json`,
 * or `results/partial.node24.json` for a partial run) and rewrites the page beside it from every
 * Node's file, so each target stands with its Node 20 and its Node 24 figure side by side, each
 * Node's figures from its own run; a Node with no file reads "not run".
 */

/** The Nodes the page always shows, the supported oldest and the recommended; others found are added. */
const SHOWN = [20, 24]

/** What one run on one Node wrote. */
export interface NodeResults {
  /** `process.version` of the run, e.g. `v24.21.0`. */
  node: string
  measuredAt: string
  seconds: number
  machine: string
  parts: string[]
  targets: TargetCheck[]
  sections: BenchSection[]
}

const major = (version: string) => Number(/^v?(\d+)/.exec(version)?.[1])
const fileOf = (dir: URL, stem: string, nodeMajor: number) => new URL(`${stem}.node${nodeMajor}.json`, dir)

/**
 * Writes this run's file under `dir` (`<stem>.node<major>.json`), then the combined page `<stem>.md` from every Node's
 * file there.
 */
export function writeNodeResults(dir: URL, stem: string, results: NodeResults): string {
  writeFileSync(fileOf(dir, stem, major(results.node)), JSON.stringify(results, null, 2))
  const page = combinedReport(readNodeResults(dir, stem))
  writeFileSync(new URL(`${stem}.md`, dir), page)
  return page
}

/** Every Node's results under `dir`, by major. */
export function readNodeResults(dir: URL, stem: string): Map<number, NodeResults> {
  const found = new Map<number, NodeResults>()
  for (let nodeMajor = 18; nodeMajor <= 40; nodeMajor += 1) {
    const file = fileOf(dir, stem, nodeMajor)
    if (existsSync(file)) found.set(nodeMajor, JSON.parse(readFileSync(file, 'utf8')) as NodeResults)
  }
  return found
}

/** The page: each Node's run, the targets with every Node's figure side by side, then each Node's sections. */
export function combinedReport(byNode: Map<number, NodeResults>): string {
  const majors = [...new Set([...SHOWN, ...byNode.keys()])].sort((a, b) => a - b)
  const header = (m: number) => (byNode.get(m) ? `Node ${m} (${byNode.get(m)?.node})` : `Node ${m}`)
  // A target is its name and which occurrence of it (two parts each check "acknowledged callbacks lost").
  const keyed = (targets: TargetCheck[]) => {
    const seen = new Map<string, number>()
    return targets.map((t) => {
      seen.set(t.name, (seen.get(t.name) ?? 0) + 1)
      return { key: `${t.name}#${seen.get(t.name)}`, t }
    })
  }
  const rows: Array<{ key: string; t: TargetCheck }> = []
  for (const results of byNode.values())
    for (const row of keyed(results.targets)) if (!rows.some((r) => r.key === row.key)) rows.push(row)
  const cell = (m: number, key: string) => {
    const results = byNode.get(m)
    if (!results) return 'not run'
    const t = keyed(results.targets).find((candidate) => candidate.key === key)?.t
    return t ? `${t.measured} ${t.met ? 'yes' : '**no**'}` : '—'
  }
  const runs = majors.map((m) => {
    const results = byNode.get(m)
    return results
      ? `- ${header(m)}: measured ${results.measuredAt} in ${results.seconds} s, parts ${results.parts.join(', ')}` +
          `. Machine: ${results.machine}.`
      : `- Node ${m}: not run.`
  })
  return [
    '# Benchmark results',
    '',
    "`npm run bench` (test/bench/bench.run.ts) writes its own Node's results (`RESULTS.node<major>.json`) and " +
      "this page from every Node's: " +
      'run it once on each Node (`npm run bench` and `npm run bench:node24`, test/bench/PERFORMANCE.md). Each ' +
      'column is one run on that Node.',
    '',
    ...runs,
    '',
    'Every figure is a ratio against a bare baseline measured in the same run: the machine is shared and noisy, ' +
      'and absolute figures do not carry from run to run.',
    '',
    '## Targets',
    '',
    `| target | wanted | ${majors.map(header).join(' | ')} |`,
    `| --- | --- | ${majors.map(() => '---').join(' | ')} |`,
    ...rows.map(({ key, t }) => `| ${t.name} | ${t.target} | ${majors.map((m) => cell(m, key)).join(' | ')} |`),
    '',
    ...majors.flatMap((m) => {
      const results = byNode.get(m)
      if (!results) return []
      return [
        `## ${header(m)}`,
        '',
        ...results.sections.map((section) => sectionMarkdown(section).replace(/^## /, '### ')),
      ]
    }),
  ].join('\n')
}
