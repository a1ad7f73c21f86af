import { availableParallelism } from 'node:os'
import { isDeepStrictEqual } from 'node:util'
import postgres from 'postgres'
import { type Config, MEMORY_DATA_DIR } from '../../src/config/index.js'
import { type Database, openDatabase } from '../../src/storage/database.client.js'
import type { Gateway } from '../../src/gateway.assembly.js'
import { startBenchGateway } from './bench.gateway.js'
import { type BenchContext, type BenchSection, ms, ratio, type TargetCheck } from './bench.report.js'
import { startCeiling } from './query.ceiling.js'
import { measureInTurns, type WorkFigure } from './query.windows.js'
import { costTable, explainStatements, type StatementCost, statementRecorder } from './query.explain.js'
import {
  type DataShape,
  dataShape,
  foldAndSettle,
  growTasks,
  HELD_SETTINGS,
  SEED_SERVICE_CODE,
  seedTasks,
} from './query.seed.js'
import { type ServeProcess, startServe } from './serve.process.js'
import { treeCpuMs } from './process.cpu.js'
import { UpstreamVariants } from './query.upstream.js'
import { PEER_DESCRIPTION, PostGraphilePeer } from './peer.postgraphile.js'
import type { LoadRequest } from './load.generate.js'

const CONNECTIONS = Number(process.env.BENCH_QUERY_CONNECTIONS ?? 16)
const WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? 2000)
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 8000)
// Every server and operation takes its turn this many times, DURATION_MS in all for each.
const ROUNDS = 2
const TASKS = 1000
const SMALL = 10_000
const LARGE = Number(process.env.BENCH_QUERY_CALLBACKS ?? 1_000_000)
// `serve --workers` at its default on a server: one per core.
const CORES = availableParallelism()
// Flat means within a quarter either way: the machine's own noise between two windows is ~10%.
const FLAT_LOW = 0.8
const FLAT_HIGH = 1.25

/** The task page: a page of tasks with outputs, streams, recordings and the latest notifications. */
export const TASK_PAGE_QUERY = `query TaskPage($first: Int, $after: String, $filter: TaskFilter) {
  tasks(first: $first, after: $after, filter: $filter) {
    totalCount
    pageInfo { hasNextPage endCursor }
    edges {
      cursor
      node {
        id taskId serviceCode vsId userName status endReason isResume liveOnly opaque startedAt endedAt listed
          httpLiveUrl inputBytes
        outputs {
          index tag playUrl timeShiftUrl fileName width height httpOutputBytes connections startedAt endedAt
          format { container videoCodec audioCodec }
          streams { index kind codecId width height copyMode bitRate }
          recordings { outputIndex playUrl fileName duration receivedAt }
        }
        recordings { outputIndex tag playUrl fileName duration width height inputBytes createdAt receivedAt format {
          container } }
        thumbnails { imageUrl width height receivedAt }
        notifications(first: 5) {
          edges {
            cursor
            node {
              __typename id kind type taskId userName receivedAt deliveries signatureVerified
              ... on LiveStartNotification { playUrl tag createdAt format { container videoCodec audioCodec } }
              ... on LiveEndNotification { reachEnd outputIndex inputBytes }
              ... on ArchivedNotification { playUrl fileName duration }
              ... on ThumbnailNotification { imageUrl width height }
              ... on LiveResumeNotification { status }
            }
          }
        }
      }
    }
  }
}`

/** The small query: three columns of the newest 20 tasks, nothing nested. */
export const SMALL_QUERY =
  'query TaskList($first: Int) { tasks(first: $first) { edges { node { id status userName } } } }'

function body(variables: Record<string, unknown>, operationName = 'TaskPage', query = TASK_PAGE_QUERY): LoadRequest {
  const bytes = Buffer.from(JSON.stringify({ operationName, query, variables }))
  return {
    path: '/graphql',
    headers: { 'content-type': 'application/json', 'content-length': String(bytes.length) },
    body: bytes,
  }
}

async function post(url: string, request: LoadRequest): Promise<{ status: number; json: any }> {
  const response = await fetch(new URL(request.path, url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: request.body,
  })
  return { status: response.status, json: await response.json() }
}

/** Four task pages: the first three in order (keyset cursors) and one filtered by status. */
async function taskPagePool(url: string): Promise<LoadRequest[]> {
  const pool = [body({ first: 50 })]
  for (let page = 0; page < 2; page++) {
    const answer = await post(url, pool.at(-1) as LoadRequest)
    const cursor = answer.json?.data?.tasks?.pageInfo?.endCursor
    if (typeof cursor !== 'string')
      throw new Error(`task page answered without a cursor: ${JSON.stringify(answer.json).slice(0, 400)}`)
    pool.push(body({ first: 50, after: cursor }))
  }
  pool.push(body({ first: 50, filter: { status: ['LIVE', 'WAITING_RECONNECT'] } }))
  return pool
}

/**
 * Both servers must give the same answer to every request of the pool before either is measured:
 * twice over, so the second round compares what each serves once it has compiled the operation.
 * `compared` picks what must be equal (a livegate with a failing upstream adds `extensions`).
 */
async function checkSameAnswers(
  livegateUrl: string,
  otherUrl: string,
  pool: LoadRequest[],
  other = 'the ceiling',
  compared = (json: any): unknown => json,
): Promise<void> {
  for (const request of [...pool, ...pool]) {
    const [ours, theirs] = await Promise.all([post(livegateUrl, request), post(otherUrl, request)])
    if (ours.status !== 200 || ours.json.errors)
      throw new Error(`livegate answered ${ours.status}: ${JSON.stringify(ours.json).slice(0, 400)}`)
    const asked = JSON.parse(request.body.toString('utf8')).variables.first
    if (ours.json.data.tasks.edges.length !== asked)
      throw new Error(`livegate answered ${ours.json.data.tasks.edges.length} tasks, not ${asked}`)
    const [a, b] = [compared(ours.json), compared(theirs.json)]
    if (!isDeepStrictEqual(a, b))
      throw new Error(`livegate and ${other} answer differently, first at ${firstDifference(a, b)}`)
  }
}

/** Where two JSON values first differ: the path, then each side's value there. */
export function firstDifference(ours: unknown, theirs: unknown, path = ''): string {
  if (ours && theirs && typeof ours === 'object' && typeof theirs === 'object') {
    for (const key of new Set([...Object.keys(ours), ...Object.keys(theirs)])) {
      const [a, b] = [(ours as Record<string, unknown>)[key], (theirs as Record<string, unknown>)[key]]
      if (!isDeepStrictEqual(a, b)) return firstDifference(a, b, `${path}.${key}`)
    }
  }
  return `${path || '(top)'}: ${JSON.stringify(ours)?.slice(0, 300)} ≠ ${JSON.stringify(theirs)?.slice(0, 300)}`
}

function row({ name, result, nodeCpuMs, postgresCpuMs }: WorkFigure, ceiling: WorkFigure): string[] {
  return [
    name,
    result.rps.toFixed(0),
    ms(result.p50Ms),
    ms(result.p99Ms),
    ratio(result.rps, ceiling.result.rps),
    nodeCpuMs.toFixed(2),
    postgresCpuMs.toFixed(2),
    `${result.failedTotal} / ${result.errorsTotal}`,
  ]
}

interface Served {
  gateway: Gateway
  config: Config
  database: Database
  recorder: ReturnType<typeof statementRecorder>
  close(): Promise<void>
}

/** livegate on a database, through a handle that records statements on demand (for EXPLAIN). */
async function serve(url: string): Promise<Served> {
  const recorder = statementRecorder()
  const database = await openDatabase({ url, dataDir: MEMORY_DATA_DIR, logger: recorder.logger })
  const started = await startBenchGateway({
    databaseUrl: url,
    service: { serviceCode: SEED_SERVICE_CODE, secret: 'bench-secret' },
    value: HELD_SETTINGS,
    database,
  })
  return {
    gateway: started.gateway,
    config: started.config,
    database,
    recorder,
    async close() {
      await started.close()
      await database.close()
    },
  }
}

/**
 * The task page and the small query: livegate at 10k stored callbacks and at 1M, against the
 * independent one-statement SQL ceiling at 1M, all on one seeded database.
 */
export async function runQueryBench(ctx: BenchContext): Promise<BenchSection> {
  const largeDb = await ctx.createDatabase()
  const largeName = new URL(largeDb.url).pathname.slice(1)
  const smallName = `${largeName}_small`
  const smallUrl = Object.assign(new URL(largeDb.url), { pathname: `/${smallName}` }).toString()
  const admin = postgres(ctx.serverUrl, { max: 1, onnotice: () => {} })
  // Seeding commits thousands of small transactions; the measured part only reads.
  await admin.unsafe(`alter database "${largeName}" set synchronous_commit = off`)
  const figures: WorkFigure[] = []
  const explained: StatementCost[][] = []
  const served: Served[] = []
  let upstream: UpstreamVariants | undefined
  let upstreamTargets: TargetCheck[] = []
  let polls: number[] = []
  const shapes: DataShape[] = []
  const pageBytes: number[] = []
  const processes: ServeProcess[] = []
  let peer: PostGraphilePeer | undefined
  try {
    let begun = Date.now()
    const seeding = await openDatabase({ url: largeDb.url, dataDir: MEMORY_DATA_DIR })
    await seeding.migrate()
    const real = await seedTasks(seeding, TASKS)
    const nextGeneration = await growTasks(seeding.db, real, TASKS, SMALL, 1)
    await foldAndSettle(seeding)
    shapes.push(await dataShape(seeding.db))
    await seeding.close()
    ctx.log(
      `query: ${TASKS} tasks from ${real} real callbacks, grown to ${SMALL} callbacks and folded in
        ${((Date.now() - begun) / 1000).toFixed(0)}` + ` s`,
    )
    // The small database is a copy taken now, so both sizes can be measured in the same minute.
    await admin.unsafe(`create database "${smallName}" template "${largeName}"`)
    upstream = await UpstreamVariants.prepare(admin, smallName, `task page: livegate, ${SMALL / 1000}k callbacks`)
    begun = Date.now()
    const growing = await openDatabase({ url: largeDb.url, dataDir: MEMORY_DATA_DIR })
    await growTasks(growing.db, real, TASKS, LARGE, nextGeneration)
    await foldAndSettle(growing)
    shapes.push(await dataShape(growing.db))
    await growing.close()
    ctx.log(`query: grown to ${LARGE} callbacks and folded in ${((Date.now() - begun) / 1000).toFixed(0)} s`)

    const small = await serve(smallUrl)
    served.push(small)
    const big = await serve(largeDb.url)
    served.push(big)
    const ceiling = await startCeiling(largeDb.url)
    await upstream.start(ctx.serverUrl, TASKS)
    // livegate as deployed: `serve` processes, one worker and one per core, on the large database.
    const service = { serviceCode: SEED_SERVICE_CODE, secret: 'bench-secret' }
    processes.push(
      await startServe(largeDb.url, service, 1, HELD_SETTINGS),
      await startServe(largeDb.url, service, CORES, HELD_SETTINGS),
    )
    // The second baseline: PostGraphile 5 in one process on the same database (test/bench/peer.postgraphile.ts).
    peer = await PostGraphilePeer.start(largeDb.url)
    try {
      const pagePool = await taskPagePool(big.gateway.url)
      const smallPool = [body({ first: 20 }, 'TaskList', SMALL_QUERY)]
      const smallCeiling = await startCeiling(smallUrl)
      try {
        for (const pool of [pagePool, smallPool]) {
          await checkSameAnswers(big.gateway.url, ceiling.url, pool)
          await checkSameAnswers(small.gateway.url, smallCeiling.url, pool)
          for (const serveProcess of processes) await checkSameAnswers(serveProcess.url, ceiling.url, pool)
        }
        await peer.prepare(big.gateway.url, pagePool, smallPool)
        for (const url of [small.gateway.url, big.gateway.url])
          pageBytes.push(Buffer.byteLength(JSON.stringify((await post(url, pagePool[0] as LoadRequest)).json)))
      } finally {
        await smallCeiling.close()
      }
      // An upstream changes no data a page shows (the seeded list, folded again, is the same list);
      // while it has not answered, livegate says so in `extensions`.
      for (const url of upstream.urls)
        await checkSameAnswers(url, small.gateway.url, pagePool, 'livegate without an upstream', (json) => json.data)
      for (const request of [pagePool[1], smallPool[0]] as LoadRequest[]) {
        for (const [server, url] of [
          [small, smallUrl],
          [big, largeDb.url],
        ] as const) {
          const { statements } = await server.recorder.record(() => post(server.gateway.url, request))
          explained.push(await explainStatements(url, statements))
        }
      }
      const millions = `${LARGE / 1_000_000}M callbacks`
      const pollsBefore = upstream.polls
      const [one, every] = processes as [ServeProcess, ServeProcess]
      const peerWorks = peer.works(millions)
      const asServed = (what: string, pool: LoadRequest[]) => [
        { name: `${what}: livegate serve, 1 worker, ${millions}`, url: one.url, pool, cpuMs: () => treeCpuMs(one.pid) },
        {
          name: `${what}: livegate serve, ${CORES} workers, ${millions}`,
          url: every.url,
          pool,
          cpuMs: () => treeCpuMs(every.pid),
        },
      ]
      figures.push(
        ...(await measureInTurns(
          [
            { name: `task page: SQL ceiling, ${millions}`, url: ceiling.url, pool: pagePool },
            { name: `task page: livegate, ${millions}`, url: big.gateway.url, pool: pagePool },
            { name: `task page: livegate, ${SMALL / 1000}k callbacks`, url: small.gateway.url, pool: pagePool },
            ...upstream.works(pagePool),
            ...asServed('task page', pagePool),
            peerWorks.page,
            { name: `small query: SQL ceiling, ${millions}`, url: ceiling.url, pool: smallPool },
            { name: `small query: livegate, ${millions}`, url: big.gateway.url, pool: smallPool },
            ...asServed('small query', smallPool),
            peerWorks.small,
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
      polls = upstream.polls.map((count, i) => count - (pollsBefore[i] ?? 0))
      upstreamTargets = upstream.targets(figures[2] as WorkFigure, figures)
      upstreamTargets.push(
        ...(await (
          await import('./query.rawjson.js')
        ).jsonTextTarget({ databaseUrl: largeDb.url, pool: pagePool, service, value: HELD_SETTINGS, log: ctx.log })),
      )
      for (const figure of figures)
        ctx.log(
          `query: ${figure.name}: ${figure.result.rps.toFixed(0)} req/s, Node ${figure.nodeCpuMs.toFixed(2)} ms, ` +
            `PostgreSQL ${figure.postgresCpuMs.toFixed(2)} ms per request`,
        )
      ctx.log(`query: task_list requests while measuring: ${polls.join(' and ')}`)
    } finally {
      await ceiling.close()
    }
  } finally {
    await peer?.stop()
    for (const serveProcess of processes) await serveProcess.stop()
    for (const server of served) await server.close()
    await upstream?.close()
    await admin.unsafe(`drop database if exists "${smallName}" with (force)`)
    await admin.end()
    await largeDb.drop()
  }
  return querySection(figures, explained, { targets: upstreamTargets, polls }, { shapes, pageBytes })
}

/**
 * The section: both operations against the ceiling, flatness, one worker and one per core, the upstream variants, and
 * the plans.
 */
function querySection(
  figures: WorkFigure[],
  explained: StatementCost[][],
  upstream: { targets: TargetCheck[]; polls: number[] },
  data: { shapes: DataShape[]; pageBytes: number[] },
): BenchSection {
  const named = (start: string, part: string) =>
    figures.find((f) => f.name.startsWith(start) && f.name.includes(part)) as WorkFigure
  const ceiling = named('task page', 'SQL ceiling')
  const large = named('task page: livegate, ', `${LARGE / 1_000_000}M`)
  const small = named('task page: livegate, ', `${SMALL / 1000}k callbacks`)
  const smallCeiling = named('small query', 'SQL ceiling')
  const smallLarge = named('small query: livegate, ', 'M callbacks')
  const pageWorkers = named('task page', `${CORES} workers`)
  const smallWorkers = named('small query', `${CORES} workers`)
  const flat = large.result.rps / small.result.rps
  const sizes = [`${SMALL / 1000}k`, `${LARGE / 1_000_000}M`] as const
  const plans = costTable(explained[0] ?? [], explained[1] ?? [], ...sizes)
  const smallPlans = costTable(explained[2] ?? [], explained[3] ?? [], ...sizes).replace(
    'statement of one task page',
    'statement of the small query',
  )
  const rowOf = (figure: WorkFigure) => row(figure, figure.name.startsWith('small') ? smallCeiling : ceiling)
  const shapeOf = (shape: DataShape | undefined, bytes: number | undefined) =>
    shape
      ? `${shape.tasks} tasks, ${shape.callbacks} callbacks, ${shape.recordingsPerTask.toFixed(2)} recordings and ${shape.thumbnailsPerTask.toFixed(2)}` +
        ` thumbnails per task, ${((bytes ?? 0) / 1024).toFixed(0)} KB per task page`
      : '—'
  return {
    title: 'Query',
    description:
      `Two operations over HTTP POST, ${CONNECTIONS} keep-alive connections from a load generator in a process ` +
      `of its own. The task page: \`tasks(first: 50)\` ` +
      `with outputs, streams, recordings, thumbnails and each task's latest 5 notifications, a pool of four ` +
      `(pages 1–3 by cursor and a status filter). ` +
      `The small query: \`tasks(first: 20) { edges { node { id status userName } } }\`. Every server and ` +
      `operation is measured in ${ROUNDS} windows of ` +
      `${WARMUP_MS / 1000} s warm-up then ${DURATION_MS / ROUNDS / 1000} s, all taking turns (latencies pooled). ` +
      `The data grows as a deployment's does: ${TASKS} tasks kept from real signed callbacks and a task_list ` +
      `answer (each task a start per output, three thumbnails, ` +
      'and for one in four an end and a recording per output; resumes and disconnects), then more tasks over ' +
      'time, each a copy of one of those under a new id and a later start, ' +
      `until the callbacks table holds ${SMALL} rows (${shapeOf(data.shapes[0], data.pageBytes[0])}); that ` +
      `database is copied, and the original grown on to ${LARGE} rows ` +
      `(${shapeOf(data.shapes[1], data.pageBytes[1])}). Each time, the projection folds everything and \`vacuum ` +
      `analyze\` runs before any window: the data holds still while it is measured. ` +
      'livegate runs in the bench process on both sizes (its Node CPU: the main thread), and as `livegate serve` ' +
      'processes on the large one, with 1 worker and with one ' +
      `per core (${CORES}; their Node CPU: every thread of the primary and its workers). ` +
      'Two more copies of the small database each serve a livegate whose service code has a task_list upstream, ' +
      'polled at the default interval: ' +
      'a simulated task_list answering after 200 ms (the seeded list, folded again on every poll) and one never ' +
      'answering; each is checked to ' +
      'answer the task pages as livegate without an upstream does, and measured in the same turns; their targets ' +
      'are ratios of that figure. ' +
      'The ceiling is independent of livegate: bare node:http and postgres.js answering each operation with one ' +
      'SQL statement that reads the tables ' +
      'and builds the whole response JSON in PostgreSQL (test/bench/query.ceiling-sql.ts), in the bench process; ' +
      'it shares no code with livegate, and every livegate is checked to ' +
      'give the same JSON (deep-equal after parsing) for every request of the pools before any is measured. ' +
      'Ratios are against the ceiling on the ' +
      `same operation. ${PEER_DESCRIPTION} ` +
      '"PostgreSQL CPU" is that of the server\'s processes per answer; both CPU figures are over whole windows, ' +
      'warm-up included.',
    columns: [
      'figure',
      'req/s',
      'p50 ms',
      'p99 ms',
      'ratio vs SQL ceiling',
      'Node CPU ms/req',
      'PostgreSQL CPU ms/req',
      'non-2xx / errors',
    ],
    rows: figures.map(rowOf),
    targets: [
      {
        name: 'task page vs independent SQL ceiling (one process)',
        target: '≥ 0.60×',
        measured: ratio(large.result.rps, ceiling.result.rps),
        met: large.result.rps >= 0.6 * ceiling.result.rps,
      },
      {
        name: `task page, serve with ${CORES} workers (one per core), vs independent SQL ceiling`,
        target: '≥ 0.70×',
        measured: ratio(pageWorkers.result.rps, ceiling.result.rps),
        met: pageWorkers.result.rps >= 0.7 * ceiling.result.rps,
      },
      {
        name: 'small query vs independent SQL ceiling',
        target: '≥ 0.50×',
        measured: ratio(smallLarge.result.rps, smallCeiling.result.rps),
        met: smallLarge.result.rps >= 0.5 * smallCeiling.result.rps,
      },
      {
        name: `small query, serve with ${CORES} workers, vs independent SQL ceiling`,
        target: '≥ 0.50×',
        measured: ratio(smallWorkers.result.rps, smallCeiling.result.rps),
        met: smallWorkers.result.rps >= 0.5 * smallCeiling.result.rps,
      },
      ...PostGraphilePeer.targets(figures, { page: 'livegate serve, 1 worker', small: 'livegate serve, 1 worker' }),
      {
        name: `task page flat from ${SMALL / 1000}k to ${LARGE / 1_000_000}M callbacks (req/s at 1M ÷ at 10k)`,
        target: `${FLAT_LOW.toFixed(2)}×–${FLAT_HIGH.toFixed(2)}×`,
        measured: ratio(large.result.rps, small.result.rps),
        met: flat >= FLAT_LOW && flat <= FLAT_HIGH,
      },
      ...upstream.targets,
    ],
    notes: [
      'On this machine the load generator, the servers and PostgreSQL share the same cores, so throughput ' +
        'follows the CPU a request costs in all of ' +
        'them: the ceiling spends most of its little CPU in PostgreSQL building JSON, livegate most of its in ' +
        'its one Node thread. ' +
        "livegate reads only what an operation selects: a task's derived node is stored beside its state " +
        '(`tasks.node`, written with the state), and ' +
        'a selection of scalar columns reads those columns alone; Apollo writes answers without indentation.',
      '',
      `The simulated task_lists had ${upstream.polls.join(' and ')} requests while the figures were measured ` +
        `(answering after 200 ms, never answering).`,
      '',
      `EXPLAIN (ANALYZE, BUFFERS) of the statements livegate sends for page 2 and for the small query, at ${SMALL / 1000}` +
        `k and ${LARGE / 1_000_000}M stored callbacks:`,
      '',
      plans,
      '',
      smallPlans,
    ].join('\n'),
    // Latencies stay out of results.json: a typed array would be written index by index.
    data: {
      figures: figures.map(({ result: { latencies: _, ...result }, ...figure }) => ({ ...figure, result })),
      explained,
      p99VsCeiling: large.result.p99Ms / ceiling.result.p99Ms,
      upstreamPolls: upstream.polls,
      cores: CORES,
      shapes: data.shapes,
      pageBytes: data.pageBytes,
    },
  }
}
