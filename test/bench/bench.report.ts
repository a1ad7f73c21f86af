/**
 * What every part of `npm run bench` hands back to the runner, which prints it, writes it to
 * `RESULTS.md` as Markdown and to its Node's `RESULTS.node<major>.json` as is.
 */
export interface BenchSection {
  /** The Markdown heading, e.g. `Ingest`. */
  title: string
  /** One paragraph: what was measured, how, and what the columns mean. */
  description: string
  /** Column headers of the table, in order; the first names the figure. */
  columns: string[]
  /** One row per figure, cells in the order of `columns`, already formatted. */
  rows: string[][]
  /** The targets this part checks, each measured in this run. */
  targets: TargetCheck[]
  /** Extra Markdown after the table (profiles, notes); may be empty. */
  notes?: string
  /** The raw figures, for results.json. */
  data: unknown
}

/** One target of the issue, judged on this run's figures. */
export interface TargetCheck {
  /** e.g. `ingest on PostgreSQL vs group-commit baseline`. */
  name: string
  /** e.g. `≥ 0.80×`. */
  target: string
  /** e.g. `0.91×`. */
  measured: string
  met: boolean
}

/** What a part is given: a PostgreSQL server it may create databases on. */
export interface BenchContext {
  /** A superuser URL of the bench's own server (or BENCH_DATABASE_URL). */
  serverUrl: string
  /** A fresh database on that server, dropped by `drop()`. */
  createDatabase(): Promise<{ url: string; drop: () => Promise<void> }>
  /** Progress lines go here (standard error), never into the results. */
  log(line: string): void
}

/** A ratio as the tables print it. */
export function ratio(value: number, base: number): string {
  return Number.isFinite(value / base) ? `${(value / base).toFixed(3)}×` : '—'
}

/** A number of milliseconds as the tables print it. */
export function ms(value: number): string {
  return Number.isFinite(value) ? value.toFixed(1) : '—'
}

/** The q-quantile of a sorted array (NaN when empty). */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number
}

/** A section as Markdown: heading, description, table, targets, notes. */
export function sectionMarkdown(section: BenchSection): string {
  const lines = [`## ${section.title}`, '', section.description, '']
  lines.push(
    `| ${section.columns.join(' | ')} |`,
    `| ${section.columns.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`,
  )
  for (const row of section.rows) lines.push(`| ${row.join(' | ')} |`)
  if (section.targets.length > 0) {
    lines.push('', '| target | wanted | measured | met |', '| --- | --- | --- | --- |')
    for (const t of section.targets)
      lines.push(`| ${t.name} | ${t.target} | ${t.measured} | ${t.met ? 'yes' : '**no**'} |`)
  }
  if (section.notes) lines.push('', section.notes)
  lines.push('')
  return lines.join('\n')
}
