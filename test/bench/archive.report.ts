import type { IntakeCost } from './archive.intake.js'
import type { IntakeFigures } from './archive.bench.js'
import { type BenchSection, ms, ratio, type TargetCheck } from './bench.report.js'
import type { StatementCost } from './query.explain.js'
import type { WorkFigure } from './query.windows.js'

/** The figures of one archive run, as {@link archiveSection} prints them. */
export interface ArchiveRun {
  seedMs: number
  recordings: number
  /** Answers per catalogue and way, over every batch. */
  answers: number
  /** Keep-alive connections of the page's load. */
  connections: number
  intake: IntakeFigures[]
  figures: WorkFigure[]
  /** livegate's statements for one page by user, then by code and user. */
  explained: StatementCost[][]
}

const ANSWER = 'list_files answer of 100 files, nothing new'
const PAGE_TARGET = 0.8
const INTAKE_TARGET_MS = 5
// The same bounds the query bench holds a 100-fold larger store to.
const FLAT_HIGH = 1.25

const total = (cost: IntakeCost) => cost.nodeMs + cost.postgresMs
const thousands = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1000}k`)

function statementTable(title: string, costs: Array<{ name: string; cost: StatementCost }>): string {
  const lines = [`| ${title} | plan | buffers | rows scanned |`, '| --- | --- | ---: | ---: |']
  for (const { name, cost } of costs) {
    const plan = cost.scans.join(', ') || '—'
    lines.push(`| ${name}: \`${cost.label}\` | ${plan} | ${cost.buffers} | ${cost.rowsScanned} |`)
  }
  return lines.join('\n')
}

/** The section: the page against its ceiling, one answer taken in at 10k and at 1M, the seed, the plans. */
export function archiveSection(run: ArchiveRun): BenchSection {
  const named = (start: string, part: string) => {
    return run.figures.find((f) => f.name.startsWith(start) && f.name.includes(part)) as WorkFigure
  }
  const pages = ['by user', 'by code and user'].map((what) => ({
    what,
    livegate: named(what, 'livegate'),
    ceiling: named(what, 'SQL ceiling'),
  }))
  const [small, large] = run.intake as [IntakeFigures, IntakeFigures]
  const [smallName, largeName] = [thousands(small.recordings), thousands(large.recordings)]
  const rows: string[][] = []
  for (const { what, livegate, ceiling } of pages) {
    const cpu = (f: WorkFigure) => [ms(f.nodeCpuMs), ms(f.postgresCpuMs)]
    const [ours, theirs] = [livegate.result.rps, ceiling.result.rps]
    const page = `recordings(first: 50), ${what}`
    rows.push([`${page}: SQL ceiling (req/s)`, theirs.toFixed(0), '', '', ...cpu(ceiling)])
    rows.push([`${page}: livegate (req/s)`, ours.toFixed(0), theirs.toFixed(0), ratio(ours, theirs), ...cpu(livegate)])
  }
  const ways = [
    ['handed', 'taken in (the poller, its answer handed in)'],
    ['poll', 'asked and taken in (the poller over HTTP to the simulator)'],
    ['upsert', 'upsertListedFiles alone'],
  ] as const
  for (const [way, label] of ways) {
    rows.push([
      `${ANSWER}: ${label}, ${largeName} vs ${smallName} recordings (Node + PostgreSQL ms)`,
      ms(total(large[way])),
      ms(total(small[way])),
      ratio(total(large[way]), total(small[way])),
      `${ms(large[way].nodeMs)} / ${ms(small[way].nodeMs)}`,
      `${ms(large[way].postgresMs)} / ${ms(small[way].postgresMs)}`,
    ])
  }
  rows.push([`${thousands(run.recordings)} recordings seeded (s)`, (run.seedMs / 1000).toFixed(1), '', '', '', ''])

  const byUser = pages[0] as (typeof pages)[number]
  const pageRatio = byUser.livegate.result.rps / byUser.ceiling.result.rps
  const flat = total(large.handed) / total(small.handed)
  const targets: TargetCheck[] = [
    {
      name: `recordings(first: 50) by user over ${thousands(run.recordings)} recordings vs one-statement SQL ceiling`,
      target: `≥ ${PAGE_TARGET.toFixed(2)}×`,
      measured: `${pageRatio.toFixed(3)}×`,
      met: pageRatio >= PAGE_TARGET,
    },
    ...[large, small].map((one) => ({
      name: `${ANSWER}, at ${thousands(one.recordings)} recordings: Node + PostgreSQL CPU`,
      target: `≤ ${INTAKE_TARGET_MS} ms`,
      measured: `${ms(total(one.handed))} ms`,
      met: total(one.handed) <= INTAKE_TARGET_MS,
    })),
    {
      name: `that answer at ${largeName} vs ${smallName} recordings (grows with what changed, not the archive)`,
      target: `≤ ${FLAT_HIGH.toFixed(2)}×`,
      measured: `${flat.toFixed(3)}×`,
      met: flat <= FLAT_HIGH,
    },
  ]
  const notes = [
    statementTable('statement of one page (livegate, EXPLAIN ANALYZE)', [
      ...(run.explained[0] ?? []).map((cost) => ({ name: 'by user', cost })),
      ...(run.explained[1] ?? []).map((cost) => ({ name: 'by code and user', cost })),
    ]),
    '',
    statementTable('statement of one answer (upsertListedFiles, EXPLAIN ANALYZE)', [
      ...small.explained.map((cost) => ({ name: smallName, cost })),
      ...large.explained.map((cost) => ({ name: largeName, cost })),
    ]),
  ].join('\n')
  const description = [
    `Issue 34's catalogue. A catalogue page, \`recordings(first: 50, filter: { userName })\` with id, fileName,`,
    "playUrl, userName, views, likes, createdAt, seenIn, totalCount and pageInfo (40 users' first pages and",
    `10 second pages, ${run.connections} keep-alive connections from a load generator of its own), over`,
    `${thousands(run.recordings)} recordings of 1,000 users of one service code, against an independent ceiling`,
    'answering the same request with one SQL statement (bare node:http + postgres.js), both answers checked',
    'deep-equal first, measured in turns in this run; again with `serviceCode` in the filter too. Then one',
    "`list_files` answer of 100 files the catalogue already holds (nothing new), taken in by livegate's own",
    `\`ArchivePoller\` (${run.answers} answers per catalogue and way, in alternating batches), on catalogues of`,
    `${smallName} and ${largeName} recordings: CPU of this process's main thread (Node) and of the PostgreSQL`,
    'server per answer. Columns: figure, value, baseline (the ceiling, or the small catalogue), ratio, Node ms,',
    'PostgreSQL ms (per request or answer; large / small).',
  ].join(' ')
  const pagesData = run.figures.map((f) => ({ ...f, result: { ...f.result, latencies: undefined } }))
  return {
    title: 'Archive',
    description,
    columns: ['figure', 'value', 'baseline', 'ratio', 'Node ms', 'PostgreSQL ms'],
    rows,
    targets,
    notes,
    data: { seedMs: run.seedMs, intake: run.intake, pages: pagesData, explained: run.explained },
  }
}
