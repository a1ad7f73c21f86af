import { resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import postgres from 'postgres'
import { MEMORY_DATA_DIR } from '../../src/config/index.js'
import { openDatabase } from '../../src/storage/database.client.js'
import type * as TaskQueries from '../../src/storage/graph/task.queries.js'
import { SEED_SERVICE_CODE, seedTasks } from './query.seed.js'

/**
 * `tsx test/bench/shapes.measure.ts`: the Node CPU of one call of `listTasks` and `countTasks`
 * (statement text built, bound, sent, answer read), this worktree's against another's
 * (SHAPES_BEFORE=/path/to/worktree, whose src/ tsx loads into this same process), on one database
 * (SHAPES_DATABASE_URL, seeded with SHAPES_TASKS tasks on first use). The calls run one at a time,
 * so the figure is this thread's work per call and PostgreSQL's time is only waited for. Rounds
 * alternate (before, after, after, before, …) so a busy machine's drift falls on both; each
 * round is SHAPES_CALLS calls of every shape below. Prints each round, then median, min and max.
 */
const URL_ = process.env.SHAPES_DATABASE_URL
const BEFORE = process.env.SHAPES_BEFORE
const ROUNDS = Number(process.env.SHAPES_ROUNDS ?? 8)
const CALLS = Number(process.env.SHAPES_CALLS ?? 500)
const TASKS = Number(process.env.SHAPES_TASKS ?? 200)

if (!URL_ || !BEFORE)
  throw new Error('SHAPES_DATABASE_URL names the database, SHAPES_BEFORE the worktree to compare with')
type Queries = typeof TaskQueries
const after = (await import('../../src/storage/graph/task.queries.js')) as Queries
const before = (await import(resolve(BEFORE, 'src/storage/graph/task.queries.ts'))) as Queries
const builds: Array<[string, Queries]> = [
  ['before', before],
  ['after', after],
]

const admin = postgres(URL_, { max: 1, onnotice: () => {} })
const [{ n } = { n: '0' }] = await admin<{ n: string }[]>`select count(*) as n from pg_tables where tablename = 'tasks'`
await admin.end()
const database = await openDatabase({ url: URL_, dataDir: MEMORY_DATA_DIR })
await database.migrate()
if (n === '0' || process.env.SHAPES_SEED) await seedTasks(database, TASKS)
const { db } = database

// The small query's page, a filtered page further down, a count the kept counts cannot answer.
const calls = (queries: Queries) => [
  () => queries.listTasks(db, {}, undefined, 21, ['status', 'author']),
  () =>
    queries.listTasks(
      db,
      { serviceCode: SEED_SERVICE_CODE, status: ['LIVE', 'ENDED'], userName: 'user' },
      { sortAt: Date.now(), id: 1e9 },
      21,
      ['status'],
    ),
  () => queries.countTasks(db, { serviceCode: SEED_SERVICE_CODE, userName: 'user' }),
]

async function round(queries: Queries): Promise<number> {
  const each = calls(queries)
  const started = process.cpuUsage()
  for (let i = 0; i < CALLS; i++) for (const call of each) await call()
  const used = process.cpuUsage(started)
  return (used.user + used.system) / (CALLS * each.length)
}

try {
  // Answers equal first: the cached texts must read what the built ones read.
  for (const [i, call] of calls(after).entries()) {
    const [a, b] = [JSON.stringify(await call()), JSON.stringify(await (calls(before)[i] as () => Promise<unknown>)())]
    if (a !== b) throw new Error(`call ${i} answers differently before and after`)
  }
  for (const [, queries] of builds) await round(queries)
  const figures = new Map<string, number[]>(builds.map(([name]) => [name, []]))
  const begun = performance.now()
  for (let r = 0; r < ROUNDS; r++) {
    for (const [name, queries] of r % 2 === 0 ? builds : [...builds].reverse()) {
      const us = await round(queries)
      figures.get(name)?.push(us)
      console.error(`shapes: round ${r + 1} (${name}): ${us.toFixed(1)} µs Node CPU per call`)
    }
  }
  for (const [name, values] of figures) {
    const sorted = [...values].sort((x, y) => x - y)
    const median = sorted[Math.floor(sorted.length / 2)] as number
    console.log(
      `shapes (${name}): median ${median.toFixed(1)} µs, min ${sorted[0]?.toFixed(1)}, max ${sorted.at(-1)?.toFixed(1)}` +
        ` µs Node CPU per call ` +
        `(${ROUNDS} rounds of ${CALLS} × 3 calls, ${((performance.now() - begun) / 1000).toFixed(0)} s, Node ${process.version}` +
        `)`,
    )
  }
} finally {
  await database.close()
}
