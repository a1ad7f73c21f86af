import { performance } from 'node:perf_hooks'
import { isDeepStrictEqual } from 'node:util'
import postgres from 'postgres'
import { toGlobalId } from '../../src/adapters/graphql/global.id.js'
import { MEMORY_DATA_DIR } from '../../src/config/index.js'
import { timelinePage } from '../../src/adapters/graphql/timeline/timeline.resolver.js'
import { type Database, openDatabase } from '../../src/storage/database.client.js'
import { timelineFacts } from '../../src/storage/graph/timeline.queries.js'
import { startBenchGateway } from './bench.gateway.js'
import { type BenchContext, type BenchSection, ms, ratio } from './bench.report.js'
import type { LoadRequest } from './load.generate.js'
import { firstDifference } from './query.bench.js'
import { foldAndSettle, HELD_SETTINGS, SEED_SERVICE_CODE, seedTasks } from './query.seed.js'
import { measureInTurns, type WorkFigure } from './query.windows.js'
import { startTimelineCeiling } from './timeline.ceiling.js'
import { type HistoryShape, seedHistory } from './timeline.seed.js'

const CONNECTIONS = Number(process.env.BENCH_TIMELINE_CONNECTIONS ?? 8)
const WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? 2000)
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 8000)
const ROUNDS = 2
const FIRST = 100
const HOUR_MS = 3_600_000
// Seeded tasks 3 and 7 are alike (each ended, with a recording per output); one gets an hour, one a day.
const TASKS = { hour: 'bench000003', day: 'bench000007' }
const FLAT_HIGH = 1.25

export const TIMELINE_QUERY = `query TaskTimeline($id: ID!, $first: Int) {
  task(id: $id) { timeline(first: $first) {
    pageInfo { hasNextPage endCursor }
    edges { cursor node { at kind source summary subject { __typename id } } }
  } }
}`

function request(taskId: string): LoadRequest {
  const variables = { id: toGlobalId('Task', SEED_SERVICE_CODE, taskId), first: FIRST }
  const body = Buffer.from(JSON.stringify({ operationName: 'TaskTimeline', query: TIMELINE_QUERY, variables }))
  return {
    path: '/graphql',
    headers: { 'content-type': 'application/json', 'content-length': String(body.length) },
    body,
  }
}

async function post(url: string, load: LoadRequest): Promise<any> {
  const response = await fetch(new URL(load.path, url), { method: 'POST', headers: load.headers, body: load.body })
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}: ${await response.text()}`)
  return response.json()
}

/** livegate and the ceiling give the same JSON, a full page of entries, twice over (the second compiled). */
async function checkSameAnswers(livegateUrl: string, ceilingUrl: string, load: LoadRequest): Promise<void> {
  for (let round = 0; round < 2; round++) {
    const [ours, theirs] = await Promise.all([post(livegateUrl, load), post(ceilingUrl, load)])
    if (ours.errors) throw new Error(`livegate answered errors: ${JSON.stringify(ours.errors).slice(0, 400)}`)
    const edges = ours.data?.task?.timeline?.edges?.length
    if (edges !== FIRST) throw new Error(`livegate answered ${edges} entries, not ${FIRST}`)
    if (!isDeepStrictEqual(ours, theirs))
      throw new Error(`livegate and the ceiling answer differently, first at ${firstDifference(ours, theirs)}`)
  }
}

/**
 * Where one request's time goes in livegate, mean ms of 20: the facts' statement (with parsing), then the
 * page's answers read a chunk at a time and folded until they settle it (the whole page less the statement).
 */
async function phases(database: Database, taskId: string): Promise<{ facts: number; fold: number; entries: number }> {
  let facts = 0
  let fold = 0
  let entries = 0
  const task = { serviceCode: SEED_SERVICE_CODE, id: taskId }
  for (let i = 0; i < 20; i++) {
    const begun = performance.now()
    await timelineFacts(database.db, SEED_SERVICE_CODE, taskId)
    const read_ = performance.now()
    entries = (await timelinePage(database.db, task, { fetch: FIRST + 1 })).length
    fold += performance.now() - read_ - (read_ - begun)
    facts += read_ - begun
  }
  return { facts: facts / 20, fold: fold / 20, entries }
}

/** `Task.timeline(first: 100)` of a task with an hour and with a day of history, against the one-statement ceiling. */
export async function runTimelineBench(ctx: BenchContext): Promise<BenchSection> {
  const created = await ctx.createDatabase()
  const admin = postgres(ctx.serverUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`alter database "${new URL(created.url).pathname.slice(1)}" set synchronous_commit = off`)
  await admin.end()
  const shapes: HistoryShape[] = []
  const figures: WorkFigure[] = []
  const profile: Array<{ history: string; facts: number; fold: number; entries: number }> = []
  try {
    const begun = Date.now()
    const database = await openDatabase({ url: created.url, dataDir: MEMORY_DATA_DIR })
    try {
      await database.migrate()
      await seedTasks(database, 8)
      // Both histories end an hour ago, on whole seconds.
      const end = Math.floor(Date.now() / HOUR_MS) * HOUR_MS - HOUR_MS
      shapes.push(await seedHistory(database.db, TASKS.hour, end - HOUR_MS, HOUR_MS))
      shapes.push(await seedHistory(database.db, TASKS.day, end - 24 * HOUR_MS, 24 * HOUR_MS))
      await foldAndSettle(database)
      ctx.log(`timeline: seeded in ${((Date.now() - begun) / 1000).toFixed(0)} s: ${JSON.stringify(shapes)}`)
      const started = await startBenchGateway({
        databaseUrl: created.url,
        service: { serviceCode: SEED_SERVICE_CODE, secret: 'bench-secret' },
        value: HELD_SETTINGS,
        database,
      })
      const ceiling = await startTimelineCeiling(created.url)
      try {
        const url = started.gateway.url
        const [hour, day] = [request(TASKS.hour), request(TASKS.day)]
        for (const load of [hour, day]) await checkSameAnswers(url, ceiling.url, load)
        for (const [history, taskId] of Object.entries(TASKS))
          profile.push({ history, ...(await phases(database, taskId)) })
        figures.push(
          ...(await measureInTurns(
            [
              { name: 'SQL ceiling, 1 day', url: ceiling.url, pool: [day] },
              { name: 'livegate, 1 day', url, pool: [day] },
              { name: 'livegate, 1 hour', url, pool: [hour] },
              { name: 'SQL ceiling, 1 hour', url: ceiling.url, pool: [hour] },
            ],
            {
              rounds: ROUNDS,
              connections: CONNECTIONS,
              warmupMs: WARMUP_MS,
              durationMs: DURATION_MS,
              postgresPort: new URL(ctx.serverUrl).port,
            },
          )),
        )
        for (const figure of figures) ctx.log(`timeline: ${figure.name}: ${figure.result.rps.toFixed(0)} req/s`)
      } finally {
        await ceiling.close()
        await started.close()
      }
    } finally {
      await database.close()
    }
  } finally {
    await created.drop()
  }
  return timelineSection(figures, shapes, profile)
}

function timelineSection(
  figures: WorkFigure[],
  shapes: HistoryShape[],
  profile: Array<{ history: string; facts: number; fold: number; entries: number }>,
): BenchSection {
  const named = (name: string) => figures.find((figure) => figure.name === name) as WorkFigure
  const [ceiling, day, hour] = [named('SQL ceiling, 1 day'), named('livegate, 1 day'), named('livegate, 1 hour')]
  const vsCeiling = day.result.rps / ceiling.result.rps
  const slower = hour.result.rps / day.result.rps
  const shape = (s: HistoryShape) =>
    `${s.spanMs / HOUR_MS} h: ${s.samples} samples, ${s.callbacks} callbacks, ${s.events} derived events, ` +
    `${s.incidents} incidents, ${s.actions} actions, ${s.recordings} recordings, ${s.deliveries} deliveries`
  return {
    title: 'Timeline',
    description:
      `\`task(id:) { timeline(first: ${FIRST}) }\` (cursor, at, kind, source, summary, subject's __typename and id) ` +
      `over HTTP POST, ${CONNECTIONS} keep-alive connections, for a task with an hour and a task with a day of ` +
      `history (${shapes.map(shape).join('; ')}), written straight into livegate's tables ` +
      '(test/bench/timeline.seed.ts) ' +
      'beside 8 tasks kept from signed callbacks, then folded and `vacuum analyze`d. Each figure is measured in ' +
      `${ROUNDS} windows of ${WARMUP_MS / 1000} s warm-up then ${DURATION_MS / ROUNDS / 1000} s, taking turns. The ` +
      'ceiling shares no code with livegate: bare node:http and postgres.js answering with one statement that ' +
      'reads the tables and builds the response JSON, folding the task list answers by a recursive walk of one ' +
      'step per run (test/bench/timeline.ceiling-sql.ts); both answers are checked deep-equal before measuring.',
    columns: ['figure', 'req/s', 'p50 ms', 'p99 ms', 'ratio vs SQL ceiling, 1 day', 'Node CPU ms/req', 'PG CPU ms/req'],
    rows: figures.map((f) => [
      f.name,
      f.result.rps.toFixed(0),
      ms(f.result.p50Ms),
      ms(f.result.p99Ms),
      ratio(f.result.rps, ceiling.result.rps),
      f.nodeCpuMs.toFixed(2),
      f.postgresCpuMs.toFixed(2),
    ]),
    targets: [
      {
        name: `Task.timeline(first: ${FIRST}), 1 day of history, vs the SQL ceiling`,
        target: '≥ 0.80×',
        measured: ratio(day.result.rps, ceiling.result.rps),
        met: vsCeiling >= 0.8,
      },
      {
        name: 'Task.timeline flat from 1 hour to 1 day of history (req/s at 1 hour ÷ at 1 day)',
        target: `≤ ${FLAT_HIGH.toFixed(2)}×`,
        measured: ratio(hour.result.rps, day.result.rps),
        met: slower <= FLAT_HIGH,
      },
    ],
    notes: [
      'Where a livegate request spends its time (in the bench process, mean of 20, outside the windows): the ' +
        "facts' one statement with its JSON parsed, then the page's answers read in chunks and folded until they " +
        'settle the page (the whole page less the statement).',
      '',
      '| history | facts statement ms | answers read and folded ms | entries on the page |',
      '| --- | ---: | ---: | ---: |',
      ...profile.map((p) => `| ${p.history} | ${ms(p.facts)} | ${ms(p.fold)} | ${p.entries} |`),
    ].join('\n'),
    data: {
      figures: figures.map(({ result: { latencies: _, ...result }, ...figure }) => ({ ...figure, result })),
      shapes,
      profile,
    },
  }
}
