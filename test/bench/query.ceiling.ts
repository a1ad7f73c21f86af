import postgres from 'postgres'
import { type CeilingServer, serveCeiling } from './ceiling.http.js'
import { smallQueryStatement, type TaskPageArgs, taskPageStatement } from './query.ceiling-sql.js'

export type { CeilingServer }

// livegate's own pool size on a server, so neither side waits on connections the other has.
const CONNECTIONS = 10
const TASK_CURSOR = /^t1:(\d{1,15}):([1-9]\d{0,15})$/

interface Variables {
  first?: number
  after?: string
  filter?: { status?: string[] }
}

function decodeTaskCursor(cursor: string): TaskPageArgs['after'] {
  const match = TASK_CURSOR.exec(Buffer.from(cursor, 'base64url').toString('utf8'))
  if (!match) throw new Error(`not a task cursor: ${cursor}`)
  return { sortAtMs: Number(match[1]), id: Number(match[2]) }
}

/**
 * What the bench's operations cost at the SQL limit: bare node:http and postgres.js, no GraphQL
 * engine, no livegate code. It knows the bench's operations by name and answers each with one
 * statement whose one value is the response body, written as PostgreSQL gives it.
 */
export async function startCeiling(databaseUrl: string): Promise<CeilingServer> {
  // The statements are cheap but look costly to the planner (jsonb functions over sets), and JIT
  // compiling them took ten times longer than running them.
  const sql = postgres(databaseUrl, { max: CONNECTIONS, onnotice: () => {}, connection: { jit: 'off' } })
  return serveCeiling<Variables>(sql, ({ operationName, variables = {} }) => {
    if (operationName === 'TaskPage') {
      const after = variables.after ? decodeTaskCursor(variables.after) : undefined
      return taskPageStatement(sql, { first: variables.first ?? 50, after, status: variables.filter?.status })
    }
    if (operationName === 'TaskList') return smallQueryStatement(sql, variables.first ?? 20)
    throw new Error(`the ceiling knows no operation ${operationName}`)
  })
}
