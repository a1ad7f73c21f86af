import { getTableColumns, is, SQL, sql } from 'drizzle-orm'
import type { PgTable } from 'drizzle-orm/pg-core'

/** How conflicting rows are merged: the unique columns and the assignments to make. */
export interface UpsertPlan {
  /** Column names of the unique index the rows meet. */
  target: string[]
  /** `column = expression` assignments, with `excluded.` for the incoming row. */
  set: SQL
  /** Columns to give back, by name. */
  returning?: string[]
}

/**
 * A multi-row upsert as one statement: the rows as one JSON array, unpacked by PostgreSQL's
 * `jsonb_populate_recordset`. Building it costs one JSON.stringify instead of a placeholder per
 * value (a batch of callbacks spent more building its statement than on the rest of its way).
 * The array is the statement's one parameter, so its text is the same for every batch: on a
 * server it runs as a prepared statement (see prepared.client.ts), parsed and planned once per
 * connection, bound and executed in one round trip.
 */
export function upsertJson<T extends PgTable>(
  table: T,
  rows: ReadonlyArray<Record<string, unknown>>,
  plan: UpsertPlan,
): SQL {
  const fields = writableFields(table)
  const columns = sql.raw(fields.map(([, name]) => quote(name)).join(', '))
  const json = jsonParameter(rows.map((row) => record(fields, row)))
  const returning = plan.returning ? sql.raw(` returning ${plan.returning.map(quote).join(', ')}`) : sql.raw('')
  return sql`insert into ${table} (${columns}) select ${columns} from jsonb_populate_recordset(null::${table}, ${json})
    on conflict (${sql.raw(plan.target.map(quote).join(', '))}) do update set ${plan.set}${returning}`
}

/**
 * A value as a jsonb literal in the statement's text, dollar-quoted with a tag its JSON does not
 * contain (so nothing inside can end the quote, and there is nothing to escape). A statement
 * without parameters goes in one round trip: through Drizzle, postgres.js first asks the server
 * to describe any statement that has parameters, which doubled every batch's round trips.
 */
export function jsonLiteral(value: unknown): SQL {
  const json = JSON.stringify(value)
  let tag = 'lg'
  for (let n = 0; json.includes(`$${tag}$`); n++) tag = `lg${n}`
  return sql.raw(`$${tag}$${json}$${tag}$::jsonb`)
}

/** A value as one jsonb parameter: a statement whose text does not change with its values. */
export function jsonParameter(value: unknown): SQL {
  return sql`${JSON.stringify(value)}::jsonb`
}

/** `"name" = excluded."name"` for each column: the incoming row wins. */
export function takeIncoming(names: string[]): SQL {
  return sql.raw(names.map((name) => `${quote(name)} = excluded.${quote(name)}`).join(', '))
}

type Field = [key: string, name: string, fallback: unknown]

const fieldsByTable = new WeakMap<PgTable, Field[]>()

// Every column but those the database fills (a generated id, an SQL default such as the writing
// transaction's id), with its default: a key left out of the JSON would be null.
function writableFields(table: PgTable): Field[] {
  let fields = fieldsByTable.get(table)
  if (!fields) {
    fields = Object.entries(getTableColumns(table))
      .filter(
        ([, column]) =>
          column.columnType !== 'PgBigSerial53' &&
          column.columnType !== 'PgBigSerial64' &&
          column.columnType !== 'PgSerial',
      )
      .filter(([, column]) => !is(column.default, SQL))
      .map(([key, column]) => [key, column.name, column.default ?? null])
    fieldsByTable.set(table, fields)
  }
  return fields
}

// What the record input reads: by column name, bytes as `\x` hex (bytea's text form).
function record(fields: Field[], row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [key, name, fallback] of fields) {
    const value = row[key] ?? fallback
    out[name] = Buffer.isBuffer(value) ? `\\x${value.toString('hex')}` : value
  }
  return out
}

function quote(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}
