import type { Logger } from 'drizzle-orm'
import postgres from 'postgres'

/** One statement as the driver sent it. */
export interface Statement {
  query: string
  params: unknown[]
}

/** What one statement of the page cost, by PostgreSQL's own count: machine-independent. */
export interface StatementCost {
  /** e.g. `select … from "tasks"`: the table it reads first. */
  label: string
  /** Every scan in its plan, e.g. `Index Only Scan on callbacks_task_id_id_idx`. */
  scans: string[]
  /** Shared buffers hit plus read: the pages it touched. */
  buffers: number
  /** Rows its scans read in all (before filters). */
  rowsScanned: number
}

/** A drizzle logger that records the statements sent while `recording` is on. */
export function statementRecorder(): {
  logger: Logger
  record<T>(run: () => Promise<T>): Promise<{ result: T; statements: Statement[] }>
} {
  let into: Statement[] | undefined
  return {
    logger: { logQuery: (query, params) => into?.push({ query, params }) },
    async record(run) {
      const statements: Statement[] = []
      into = statements
      try {
        return { result: await run(), statements }
      } finally {
        into = undefined
      }
    },
  }
}

interface PlanNode {
  'Node Type': string
  'Index Name'?: string
  'Relation Name'?: string
  'Actual Rows'?: number
  'Actual Loops'?: number
  'Rows Removed by Filter'?: number
  'Shared Hit Blocks'?: number
  'Shared Read Blocks'?: number
  Plans?: PlanNode[]
}

function walk(node: PlanNode, visit: (node: PlanNode) => void): void {
  visit(node)
  for (const child of node.Plans ?? []) walk(child, visit)
}

/** EXPLAIN (ANALYZE, BUFFERS) of each statement, with the parameters it was sent with. */
export async function explainStatements(url: string, statements: Statement[]): Promise<StatementCost[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  try {
    const costs: StatementCost[] = []
    for (const statement of statements) {
      const [row] = await sql.unsafe(
        `explain (analyze, buffers, format json) ${statement.query}`,
        statement.params as never[],
      )
      const plan = (row?.['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]?.Plan as PlanNode
      const scans: string[] = []
      let rowsScanned = 0
      walk(plan, (node) => {
        if (
          !node['Node Type'].includes('Scan') ||
          node['Node Type'] === 'Function Scan' ||
          node['Node Type'] === 'Subquery Scan'
        )
          return
        scans.push(`${node['Node Type']} on ${node['Index Name'] ?? node['Relation Name']}`)
        rowsScanned +=
          ((node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0)) * (node['Actual Loops'] ?? 1)
      })
      // The first table read, not the `from` of an `extract(epoch from …)`.
      const from = [...statement.query.matchAll(/\bfrom\s+("?\w+"?)(\s*\))?/gi)].find((match) => !match[2])?.[1] ?? '?'
      costs.push({
        label: `${statement.query.split(/\s+/)[0]} … from ${from}`,
        scans: [...new Set(scans)],
        buffers: (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0),
        rowsScanned,
      })
    }
    return costs.sort((a, b) => a.label.localeCompare(b.label))
  } finally {
    await sql.end()
  }
}

/** The two EXPLAIN runs side by side, as a Markdown table. */
export function costTable(
  small: StatementCost[],
  large: StatementCost[],
  smallName: string,
  largeName: string,
): string {
  const lines = [
    `| statement of one task page | plan | buffers at ${smallName} | buffers at ${largeName} | rows scanned at ${smallName}` +
      ` | rows scanned at ${largeName} |`,
    '| --- | --- | ---: | ---: | ---: | ---: |',
  ]
  // Paired by label, the n-th of a label with the n-th: a statement only one side sent (a
  // background read that landed in the recording) takes a row of its own.
  const unmatched = [...large]
  const rows = small.map((cost) => {
    const at = unmatched.findIndex((candidate) => candidate.label === cost.label)
    return [cost, at < 0 ? undefined : unmatched.splice(at, 1)[0]] as const
  })
  rows.forEach(([cost, other]) => {
    lines.push(
      `| \`${cost.label}\` | ${(other ?? cost).scans.join(', ') || '—'} | ${cost.buffers} | ${other?.buffers ?? '—'}` +
        ` | ${cost.rowsScanned} | ${other?.rowsScanned ?? '—'} |`,
    )
  })
  for (const other of unmatched)
    lines.push(
      `| \`${other.label}\` | ${other.scans.join(', ') || '—'} | — | ${other.buffers} | — | ${other.rowsScanned} |`,
    )
  return lines.join('\n')
}
