import postgres from 'postgres'
import { MEMORY_DATA_DIR } from '../../src/config/index.js'
import { openDatabase } from '../../src/storage/database.client.js'
import { startArchiveCloud } from './archive.cloud.js'
import { startArchiveCeiling } from './archive.ceiling.js'
import { type IntakeCost, openIntake } from './archive.intake.js'
import { checkSameAnswers, post, recordingPool } from './archive.page.js'
import { ARCHIVE_CODE, listedArchive, seedRecordings } from './archive.seed.js'
import { startBenchGateway } from './bench.gateway.js'
import { type BenchContext, type BenchSection, ms } from './bench.report.js'
import { explainStatements, type Statement, type StatementCost, statementRecorder } from './query.explain.js'
import { measureInTurns, type WorkFigure } from './query.windows.js'
import { archiveSection } from './archive.report.js'

const LARGE = Number(process.env.BENCH_ARCHIVE_RECORDINGS ?? 1_000_000)
const SMALL = 10_000
const SECRET = 'bench-archive-secret'
// Answers per batch, batches per catalogue: the two catalogues take turns, batch by batch.
const ANSWERS = Number(process.env.BENCH_ARCHIVE_ANSWERS ?? 100)
const BATCHES = 4
const CONNECTIONS = Number(process.env.BENCH_QUERY_CONNECTIONS ?? 16)
const WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? 2000)
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 8000)

// postgres.js serializes a parameter the server types as jsonb itself: the logged JSON text goes
// back as its value.
function parsed(param: unknown): unknown {
  const json = typeof param === 'string' && param.startsWith('[{')
  return json ? JSON.parse(param) : param
}
const asSent = (statement: Statement): Statement => ({
  ...statement,
  params: statement.params.map(parsed),
})

/** What one catalogue's answers cost, summed over its batches: the three ways of taking one in. */
export interface IntakeFigures {
  recordings: number
  poll: IntakeCost
  handed: IntakeCost
  upsert: IntakeCost
  answerBytes: number
  /** The upsert's statements by PostgreSQL's own count (EXPLAIN ANALYZE). */
  explained: StatementCost[]
}

function add(into: IntakeCost | undefined, cost: IntakeCost): IntakeCost {
  if (!into) return cost
  const answers = into.answers + cost.answers
  const mean = (pick: (c: IntakeCost) => number) => (pick(into) * into.answers + pick(cost) * cost.answers) / answers
  return {
    nodeMs: mean((c) => c.nodeMs),
    postgresMs: mean((c) => c.postgresMs),
    wallMs: mean((c) => c.wallMs),
    answers,
  }
}

/** A database of livegate's layout (its migrations run), `count` recordings seeded; the seconds it took. */
async function seeded(ctx: BenchContext, count: number) {
  const created = await ctx.createDatabase()
  const database = await openDatabase({ url: created.url, dataDir: MEMORY_DATA_DIR })
  await database.migrate()
  await database.close()
  const client = postgres(created.url, { max: 1, onnotice: () => {} })
  const seedMs = await seedRecordings(client, count)
  const files = await listedArchive(client, 100)
  await client.end()
  ctx.log(`archive: ${count} recordings seeded in ${(seedMs / 1000).toFixed(1)} s`)
  return { ...created, count, seedMs, files }
}

/** The list_files answer taken in on both catalogues, batch after batch in turn. */
async function measureIntake(ctx: BenchContext, catalogues: Array<Awaited<ReturnType<typeof seeded>>>) {
  const postgresPort = new URL(ctx.serverUrl).port
  const opened = []
  try {
    for (const catalogue of catalogues) {
      const services = [{ serviceCode: ARCHIVE_CODE, secret: SECRET }]
      const cloud = await startArchiveCloud({ services, files: { [ARCHIVE_CODE]: catalogue.files } })
      const recorder = statementRecorder()
      const asked = { databaseUrl: catalogue.url, postgresPort, serviceCode: ARCHIVE_CODE, secret: SECRET, cloud }
      const intake = await openIntake({ ...asked, logger: recorder.logger }).catch(async (error) => {
        await cloud.stop()
        throw error
      })
      opened.push({ catalogue, cloud, intake, recorder })
      // Warm: every statement prepared, the pages of the newest files in the cache.
      await intake.poll(20)
      await intake.handed(20)
      await intake.upsert(20)
    }
    const sums = opened.map(() => ({}) as Partial<Record<'poll' | 'handed' | 'upsert', IntakeCost>>)
    for (let batch = 0; batch < BATCHES; batch++) {
      const order = batch % 2 === 0 ? opened : [...opened].reverse()
      for (const one of order) {
        const sum = sums[opened.indexOf(one)] as Partial<Record<'poll' | 'handed' | 'upsert', IntakeCost>>
        for (const way of ['poll', 'handed', 'upsert'] as const) {
          sum[way] = add(sum[way], await one.intake[way](ANSWERS))
        }
      }
    }
    const figures: IntakeFigures[] = []
    for (const [i, { catalogue, intake, recorder }] of opened.entries()) {
      if (intake.written() !== 0) throw new Error(`an answer with nothing new wrote ${intake.written()} catalogue rows`)
      const { statements } = await recorder.record(() => intake.upsert(1))
      const sum = sums[i] as Record<'poll' | 'handed' | 'upsert', IntakeCost>
      const explained = await explainStatements(catalogue.url, statements.map(asSent))
      figures.push({ recordings: catalogue.count, ...sum, answerBytes: intake.answerBytes(), explained })
      const { handed } = sum
      const cpu = `Node ${ms(handed.nodeMs)} ms, PostgreSQL ${ms(handed.postgresMs)} ms`
      ctx.log(`archive: ${catalogue.count} recordings: one answer taken in: ${cpu}`)
    }
    return figures
  } finally {
    for (const { cloud, intake } of opened) {
      await intake.close()
      await cloud.stop()
    }
  }
}

/** The catalogue page on the large catalogue: livegate against the ceiling, by user and by code and user. */
async function measurePages(ctx: BenchContext, url: string) {
  const recorder = statementRecorder()
  const database = await openDatabase({ url, dataDir: MEMORY_DATA_DIR, logger: recorder.logger })
  const service = { serviceCode: ARCHIVE_CODE, secret: SECRET }
  const value = { retention: { intervalMs: 0 } }
  const bench = await startBenchGateway({ databaseUrl: url, service, value, database })
  const ceiling = await startArchiveCeiling(url)
  try {
    const livegate = bench.gateway.url
    const byUser = await recordingPool(livegate)
    const byCode = await recordingPool(livegate, ARCHIVE_CODE)
    await checkSameAnswers(livegate, ceiling.url, byUser)
    await checkSameAnswers(livegate, ceiling.url, byCode)
    const explained: StatementCost[][] = []
    for (const request of [byUser[0], byCode[0]]) {
      const { statements } = await recorder.record(() => post(livegate, request as (typeof byUser)[number]))
      explained.push(await explainStatements(url, statements))
    }
    const millions = `${LARGE / 1_000_000}M recordings`
    const postgresPort = new URL(ctx.serverUrl).port
    const turns = { rounds: 2, connections: CONNECTIONS, warmupMs: WARMUP_MS, durationMs: DURATION_MS, postgresPort }
    const figures: WorkFigure[] = await measureInTurns(
      [
        { name: `by user: SQL ceiling, ${millions}`, url: ceiling.url, pool: byUser },
        { name: `by user: livegate, ${millions}`, url: livegate, pool: byUser },
        { name: `by code and user: SQL ceiling, ${millions}`, url: ceiling.url, pool: byCode },
        { name: `by code and user: livegate, ${millions}`, url: livegate, pool: byCode },
      ],
      turns,
    )
    for (const figure of figures) {
      const { rps } = figure.result
      const cpu = `Node ${ms(figure.nodeCpuMs)} ms, PostgreSQL ${ms(figure.postgresCpuMs)} ms`
      ctx.log(`archive: ${figure.name}: ${rps.toFixed(0)} req/s, ${cpu}`)
    }
    return { figures, explained }
  } finally {
    await ceiling.close()
    await bench.close()
    await database.close()
  }
}

/** `npm run bench` part `archive`: issue 34's targets on a catalogue of 1M recordings (and one of 10k). */
export async function runArchiveBench(ctx: BenchContext): Promise<BenchSection> {
  const small = await seeded(ctx, SMALL)
  try {
    const large = await seeded(ctx, LARGE)
    try {
      const intake = await measureIntake(ctx, [small, large])
      const pages = await measurePages(ctx, large.url)
      const answers = ANSWERS * BATCHES
      const { seedMs } = large
      return archiveSection({ seedMs, recordings: LARGE, intake, ...pages, answers, connections: CONNECTIONS })
    } finally {
      await large.drop()
    }
  } finally {
    await small.drop()
  }
}
