import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import postgres from 'postgres'
import { MEMORY_DATA_DIR } from '../../src/config/index.js'
import { taskListAnswerSchema } from '../../src/model/task-list.schema.js'
import { openDatabase, resultRows } from '../../src/storage/database.client.js'
import { AnswerSampler } from '../../src/work/graph/answer.sampler.js'
import { foldTaskListAnswer } from '../../src/work/graph/task-list.answer.js'
import { startBenchGateway } from './bench.gateway.js'
import { type BenchContext, type BenchSection, ms, quantile, ratio } from './bench.report.js'
import { sql } from 'drizzle-orm'

const TASKS = Number(process.env.BENCH_METRICS_TASKS ?? 1000)
const ROUNDS = Number(process.env.BENCH_METRICS_ROUNDS ?? 30)
const REQUESTS = Number(process.env.BENCH_METRICS_REQUESTS ?? 200)
const DAY = 86_400_000

// One answer listing TASKS tasks, its counters grown by round.
function answerAt(round: number) {
  return taskListAnswerSchema.parse({
    ret: 0,
    task_list: Array.from({ length: TASKS }, (_, i) => ({
      id: `bench-${i}`,
      vs_id: 'xvs-1',
      input_bytes: round * 625_000 + i,
      outputs: [
        {
          tag: 'flv_hd',
          format: 'flv',
          http_connections_num: (i * 7 + round) % 3000,
          http_output_bytes: round * (i % 3000) * 100_000,
        },
      ],
      inputs: [{ user_name: `user-${i % 200}` }],
    })),
    user_list: [],
  })
}

const median = (values: number[]) =>
  quantile(
    [...values].sort((a, b) => a - b),
    0.5,
  )

/** A 1,000-task answer folded with its samples against the same answer folded without. */
export async function samplingOverhead(url: string) {
  const database = await openDatabase({ url, dataDir: MEMORY_DATA_DIR })
  await database.migrate()
  const sampler = new AnswerSampler({ graceMs: 20_000 })
  const plain: number[] = []
  const sampled: number[] = []
  const t0 = Date.now()
  for (let round = 0; round < ROUNDS; round++) {
    const answer = answerAt(round)
    const at = new Date(t0 + round * 5000)
    // Alternated, each on a code of its own: the same graph size on both sides.
    for (const mode of round % 2 === 0 ? ['plain', 'sampled'] : ['sampled', 'plain']) {
      const begun = performance.now()
      if (mode === 'plain') await foldTaskListAnswer(database.db, 'PLAIN', answer, at)
      else await foldTaskListAnswer(database.db, 'SAMPLED', answer, at, sampler)
      // The first two rounds warm up (they insert every task).
      if (round >= 2) (mode === 'plain' ? plain : sampled).push(performance.now() - begun)
    }
  }
  const [size] = resultRows<{ bytes: string; rows: string }>(
    await database.db.execute(
      sql`select (select sum(pg_total_relation_size(i.inhrelid)) from pg_inherits i where i.inhparent =
        'task_samples'::regclass) as bytes, (select count(*) from task_samples) as rows`,
    ),
  )
  await database.close()
  return { plain: median(plain), sampled: median(sampled), rawBytesPerSample: Number(size?.bytes) / Number(size?.rows) }
}

// Rollups as the sampler leaves them, written in bulk: TASKS tasks, `days` of hours, the last day of minutes.
async function seedRollups(client: postgres.Sql, fromDay: number, toDay: number, now: number, minuteTasks: number) {
  const start = new Date(now - toDay * DAY).toISOString()
  const end = new Date(now - fromDay * DAY).toISOString()
  await client.unsafe(`insert into task_metrics_minute select 'BENCH', 'bench-' || t, m, 12, 12 * (t % 3000), t % 3000
    + 5, 7500000, 60, 7500000, 60
    from generate_series(0, ${minuteTasks - 1}) t, generate_series(date_trunc('minute', '${start}'::timestamptz),
      '${end}'::timestamptz, interval '1 minute') m on conflict do nothing`)
  await client.unsafe(`insert into task_metrics_hour select 'BENCH', 'bench-' || t, h, 720, 720 * (t % 3000), t % 3000
    + 5, 450000000, 3600, 450000000, 3600
    from generate_series(0, ${TASKS - 1}) t, generate_series(date_trunc('hour', '${start}'::timestamptz),
      '${end}'::timestamptz, interval '1 hour') h on conflict do nothing`)
  await client.unsafe(`insert into service_metrics_hour select 'BENCH', h, 720, 720 * ${TASKS}, ${TASKS}, 720 * 1500 *
    ${TASKS}, 1600 * ${TASKS}, 450000000::bigint * ${TASKS}, 3600 * 720
    from generate_series(date_trunc('hour', '${start}'::timestamptz), '${end}'::timestamptz, interval '1 hour') h on
      conflict do nothing`)
  await client.unsafe('analyze task_metrics_minute; analyze task_metrics_hour; analyze service_metrics_hour')
}

const TASK_QUERY =
  'query TaskMinutes($id: ID!, $from: DateTime, $to: DateTime) { task(id: $id) { metrics(step: MINUTE, from: ' +
  '$from, to: $to) { at samples viewers viewersMax inputBitrate outputBitrate } } }'
const SERVICE_QUERY =
  'query ServiceHours($from: DateTime, $to: DateTime) { serviceMetrics(serviceCode: "BENCH", step: HOUR, from: ' +
  '$from, to: $to) { at samples liveTasks viewers viewersMax inputBitrate } }'
const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`

/**
 * The bare ceiling: node:http and postgres.js reading the same rollup tables, one statement per
 * request building the response JSON, no livegate code. It knows the two operations by name.
 */
async function startRollupCeiling(url: string) {
  const client = postgres(url, { max: 10, onnotice: () => {}, connection: { jit: 'off' } })
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', async () => {
      const { operationName, variables } = JSON.parse(Buffer.concat(chunks).toString()) as {
        operationName: string
        variables: { id?: string; from: string; to: string }
      }
      const [row] =
        operationName === 'TaskMinutes'
          ? await client`select json_build_object('data', json_build_object('task', json_build_object('metrics', coalesce(json_agg(json_build_object('at', to_char(at at time zone 'UTC', ${ISO}), 'samples', samples,
              'viewers', round(viewers_sum::numeric / samples), 'viewersMax', viewers_max, 'inputBitrate', case when input_seconds > 0 then input_bytes * 8 / input_seconds end,
              'outputBitrate', case when output_seconds > 0 then output_bytes * 8 / output_seconds end) order by at), '[]'))))::text as body
            from task_metrics_minute where service_code = 'BENCH' and task_id = ${
              JSON.parse(
                Buffer.from(variables.id as string, 'base64url')
                  .toString()
                  .slice(5),
              )[1]
            }
              and at >= ${variables.from}::timestamptz and at < ${variables.to}::timestamptz`
          : await client`select json_build_object('data', json_build_object('serviceMetrics', coalesce(json_agg(json_build_object('at', to_char(at at time zone 'UTC', ${ISO}), 'samples', samples,
              'liveTasks', round(live_tasks_sum::numeric / samples), 'viewers', round(viewers_sum::numeric / samples), 'viewersMax', viewers_max,
              'inputBitrate', case when input_seconds > 0 then input_bytes * 8 / input_seconds end) order by at), '[]')))::text as body
            from service_metrics_hour where service_code = 'BENCH' and at >= ${variables.from}::timestamptz and at < ${variables.to}::timestamptz`
      const body = String(row?.body)
      response
        .writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
        .end(body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      await new Promise((resolve) => server.close(resolve))
      await client.end()
    },
  }
}

// Requests one after another (a dashboard's reads), as requests per second.
async function perSecond(
  url: string,
  operationName: string,
  query: string,
  variables: () => Record<string, unknown>,
): Promise<number> {
  const post = () =>
    fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ operationName, query, variables: variables() }),
    }).then((r) => r.text())
  for (let i = 0; i < 20; i++) await post()
  const begun = performance.now()
  for (let i = 0; i < REQUESTS; i++) await post()
  return REQUESTS / ((performance.now() - begun) / 1000)
}

/** `npm run bench` part `metrics`: sampling overhead, series reads against a bare SQL server, bytes on disk. */
export async function runMetricsBench(ctx: BenchContext): Promise<BenchSection> {
  const overheadDb = await ctx.createDatabase()
  const overhead = await samplingOverhead(overheadDb.url).finally(() => overheadDb.drop())
  ctx.log(`metrics: sampling ${ms(overhead.sampled)} ms vs ${ms(overhead.plain)} ms per ${TASKS}-task answer`)

  const readDb = await ctx.createDatabase()
  const rows: string[][] = []
  const reads: Record<string, { livegate: number; ceiling: number }> = {}
  let bytes = { minuteRow: Number.NaN, hourRow: Number.NaN }
  try {
    const bench = await startBenchGateway({
      databaseUrl: readDb.url,
      service: { serviceCode: 'BENCH', secret: 'bench' },
      value: { log: { level: 'silent' } },
    })
    const client = postgres(readDb.url, { max: 1, onnotice: () => {} })
    const ceiling = await startRollupCeiling(readDb.url)
    const now = Date.now()
    const window = (days: number) => ({
      from: new Date(now - days * DAY).toISOString(),
      to: new Date(now).toISOString(),
    })
    const taskVars = () => ({
      id: Buffer.from(`Task:${JSON.stringify(['BENCH', `bench-${Math.floor(Math.random() * TASKS)}`])}`).toString(
        'base64url',
      ),
      ...window(1),
    })
    try {
      // Task rows, so task(id) finds them.
      await client.unsafe(`insert into tasks (service_code, task_id, state, status, listed, sort_at, updated_at)
        select 'BENCH', 'bench-' || t, jsonb_build_object('v', 1, 'serviceCode', 'BENCH', 'taskId', 'bench-' || t,
          'firstCreatedAt', null, 'firstEventAt', null, 'author', null, 'vsId', null, 'start', null, 'end', null,
          'resume', null,
          'outputs', '{}'::jsonb, 'recordings', '[]'::jsonb, 'thumbnails', '[]'::jsonb, 'resumes', '[]'::jsonb,
            'sighting', jsonb_build_object('firstSeenAt', ${now - DAY}, 'lastSeenAt', ${now}, 'lastAbsentAt', null,
            'task', null)),
          'LIVE', true, now(), now() from generate_series(0, ${TASKS - 1}) t`)
      for (const [label, from, to, minuteTasks] of [
        ['1 day stored', 0, 1, TASKS],
        ['30 days stored', 1, 30, Math.ceil(TASKS / 10)],
      ] as const) {
        await seedRollups(client, from, to, now, minuteTasks)
        const taskL = await perSecond(bench.gateway.url, 'TaskMinutes', TASK_QUERY, taskVars)
        const taskC = await perSecond(ceiling.url, 'TaskMinutes', TASK_QUERY, taskVars)
        const serviceL = await perSecond(bench.gateway.url, 'ServiceHours', SERVICE_QUERY, () => window(30))
        const serviceC = await perSecond(ceiling.url, 'ServiceHours', SERVICE_QUERY, () => window(30))
        reads[`task ${label}`] = { livegate: taskL, ceiling: taskC }
        reads[`service ${label}`] = { livegate: serviceL, ceiling: serviceC }
        rows.push([`Task.metrics(MINUTE) over 24 h, ${label}`, taskL.toFixed(0), taskC.toFixed(0), ratio(taskL, taskC)])
        rows.push([
          `serviceMetrics(HOUR) over 30 days, ${label}`,
          serviceL.toFixed(0),
          serviceC.toFixed(0),
          ratio(serviceL, serviceC),
        ])
        ctx.log(
          `metrics: ${label}: task ${taskL.toFixed(0)}/${taskC.toFixed(0)} req/s, service ${serviceL.toFixed(0)}/${serviceC.toFixed(0)}` +
            ` req/s`,
        )
      }
      const [size] = await client<
        { minute: string; minutes: string; hour: string; hours: string }[]
      >`select pg_total_relation_size('task_metrics_minute') as minute, (select count(*) from task_metrics_minute) as minutes,
        pg_total_relation_size('task_metrics_hour') as hour, (select count(*) from task_metrics_hour) as hours`
      bytes = {
        minuteRow: Number(size?.minute) / Number(size?.minutes),
        hourRow: Number(size?.hour) / Number(size?.hours),
      }
    } finally {
      await ceiling.close()
      await client.end()
      await bench.close()
    }
  } finally {
    await readDb.drop()
  }
  // A task-day: a raw sample every 5 s (the default poll interval), 1,440 minute rows, 24 hour rows.
  const taskDay = overhead.rawBytesPerSample * (DAY / 5000) + bytes.minuteRow * 1440 + bytes.hourRow * 24
  rows.unshift([
    `fold of a ${TASKS}-task answer: sampled / not (median ms)`,
    ms(overhead.sampled),
    ms(overhead.plain),
    ratio(overhead.sampled, overhead.plain),
  ])
  const worst = (name: string) =>
    Math.min(
      ...Object.entries(reads)
        .filter(([key]) => key.startsWith(name))
        .map(([, r]) => r.livegate / r.ceiling),
    )
  // Flat: livegate keeps its pace to the ceiling (the same statement's cost on the same tables)
  // as the stored history grows thirty-fold; a 30-day window also returns more points then.
  const pace = (key: string) => (reads[key]?.livegate ?? 0) / (reads[key]?.ceiling ?? 1)
  const flat = (name: string) => pace(`${name} 30 days stored`) / pace(`${name} 1 day stored`)
  return {
    title: 'Audience history',
    description:
      `A ${TASKS}-task task_list answer folded with its samples (raw samples, minute and hour rollups per task and ` +
      `per code, task_live, in one statement) against the same answer folded without, alternated over ${ROUNDS}` +
      ` rounds on a PostgreSQL server. Then Task.metrics(step: MINUTE) over 24 h of a random task and ` +
      `serviceMetrics(step: HOUR) over 30 days, ${REQUESTS} requests one after another, against a bare node:http + ` +
      `postgres.js server reading the same rollup tables (one statement per request building the JSON); first with ` +
      `one day stored, then with 30 days (hour rollups of every task; minute rollups of a tenth of them for the 29 ` +
      `older days). Columns: livegate, ceiling, ratio.`,
    columns: ['figure', 'livegate', 'baseline', 'ratio'],
    rows: [
      ...rows,
      ['bytes on disk per raw sample (table and indexes)', overhead.rawBytesPerSample.toFixed(0), '', ''],
      ['bytes per minute / hour rollup row', bytes.minuteRow.toFixed(0), bytes.hourRow.toFixed(0), ''],
      ['bytes per task-day (raw every 5 s, minutes, hours)', taskDay.toFixed(0), '', ''],
    ],
    targets: [
      {
        name: 'sampling a 1,000-task answer vs folding it without',
        target: '≤ 1.20×',
        measured: ratio(overhead.sampled, overhead.plain),
        met: overhead.sampled / overhead.plain <= 1.2,
      },
      {
        name: 'Task.metrics(MINUTE) 24 h vs bare SQL server',
        target: '≥ 0.50×',
        measured: `${worst('task').toFixed(3)}×`,
        met: worst('task') >= 0.5,
      },
      {
        name: 'serviceMetrics(HOUR) 30 days vs bare SQL server',
        target: '≥ 0.50×',
        measured: `${worst('service').toFixed(3)}×`,
        met: worst('service') >= 0.5,
      },
      {
        name: 'series reads vs ceiling, 30 days stored against 1 day (flat)',
        target: '≥ 0.80×',
        measured: `${Math.min(flat('task'), flat('service')).toFixed(3)}×`,
        met: Math.min(flat('task'), flat('service')) >= 0.8,
      },
    ],
    data: { overhead, reads, bytes, taskDay },
  }
}
