import postgres from 'postgres'
import { type CeilingServer, serveCeiling } from './ceiling.http.js'
import { timelineStatement } from './timeline.ceiling-sql.js'

// livegate's own pool size on a server, so neither side waits on connections the other has.
const CONNECTIONS = 10

interface Variables {
  id?: string
  first?: number
}

/** A task's global id read as the schema documents it: `Task:` then its key as a JSON array. */
function taskKey(id: string): [serviceCode: string, taskId: string] {
  const text = Buffer.from(id, 'base64url').toString('utf8')
  if (!text.startsWith('Task:')) throw new Error(`not a task id: ${id}`)
  const key = JSON.parse(text.slice('Task:'.length)) as unknown
  if (!Array.isArray(key) || key.length !== 2) throw new Error(`not a task id: ${id}`)
  return [String(key[0]), String(key[1])]
}

/**
 * What `Task.timeline` costs at the SQL limit: bare node:http and postgres.js, no GraphQL engine,
 * no livegate code, one statement per request whose one value is the response body.
 */
export async function startTimelineCeiling(databaseUrl: string): Promise<CeilingServer> {
  // As the query bench's ceiling: JIT compiling these statements costs more than running them.
  const sql = postgres(databaseUrl, { max: CONNECTIONS, onnotice: () => {}, connection: { jit: 'off' } })
  return serveCeiling<Variables>(sql, ({ operationName, variables = {} }) => {
    if (operationName !== 'TaskTimeline') throw new Error(`the ceiling knows no operation ${operationName}`)
    const [serviceCode, taskId] = taskKey(variables.id ?? '')
    return timelineStatement(sql, serviceCode, taskId, variables.first ?? 100)
  })
}
