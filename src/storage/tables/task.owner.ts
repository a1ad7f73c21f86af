import { type SQL, sql } from 'drizzle-orm'

/**
 * A broadcaster's own view (issue 42): which rows are a user's. One rule for every table that
 * names a task: a row is the user's when it names the user itself (`user_name`, where the table
 * has it), or when the task it names is one the user started (`tasks.author`). A live end or a
 * thumbnail names no user: its task tells whose it is. The in-memory matches of the realtime
 * engine read the same `taskAuthor` column ({@link taskAuthorOf}) with the rows they match.
 */

/** The tables whose rows name a task by (`service_code`, `task_id`); with whether they name a user too. */
const OWNED = {
  callbacks: true,
  actions: true,
  recordings: true,
  incidents: false,
  recording_missing: false,
} as const

export type OwnedTable = keyof typeof OWNED

/**
 * Who started the task a row of `table` names (its `author`), as a column of a read of that table.
 * Written out whole: in a one-table read's select list Drizzle leaves columns unqualified, and the
 * outer row's columns would read as the subquery's own.
 */
export function taskAuthorOf(table: OwnedTable): SQL<string | null> {
  const outer = `"${table}"`
  return sql<string | null>`${sql.raw(
    `(select t.author from tasks t where t.service_code = ${outer}.service_code and t.task_id = ${outer}.task_id)`,
  )}`
}

/** The rows of `table` that are `userName`'s, as a condition. */
export function ownedBy(table: OwnedTable, userName: string): SQL {
  const ofTask = sql`${taskAuthorOf(table)} = ${userName}`
  return OWNED[table] ? sql`(${sql.raw(`"${table}".user_name`)} = ${userName} or ${ofTask})` : sql`(${ofTask})`
}

/** How many times {@link ownedBy} binds the user's name: a statement that lists its own values says it that often. */
export function ownedByValues(table: OwnedTable, userName: string): string[] {
  return OWNED[table] ? [userName, userName] : [userName]
}
