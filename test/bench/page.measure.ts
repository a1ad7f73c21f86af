import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import postgres from 'postgres'
import { MEMORY_DATA_DIR } from '../../src/config/index.js'
import { openDatabase } from '../../src/storage/database.client.js'
import { startPrivateCluster } from '../support/postgres.cluster.js'
import { startBenchGateway } from './bench.gateway.js'
import { runLoad, type LoadRequest } from './load.generate.js'
import { mainThreadCpuMs } from './process.cpu.js'
import { TASK_PAGE_QUERY } from './query.bench.js'
import { startCeiling } from './query.ceiling.js'
import { foldAndSettle, growTasks, HELD_SETTINGS, SEED_SERVICE_CODE, seedTasks } from './query.seed.js'

/**
 * `tsx test/bench/page.measure.ts`: the task page's Node CPU per page alone, in a minute instead
 * of the bench's eighteen, for working on it change by change. The bench's data at 10k callbacks
 * (seeded once into PAGE_DATABASE_URL's database and reused while its `tasks` are there, else
 * into a private cluster), livegate in this process checked against the ceiling, then windows of
 * load from a process of its own; the main thread's CPU over each window divided by its pages.
 * PAGE_PROFILE=file.cpuprofile adds a window under V8's profiler; PAGE_ANSWERS=file writes the
 * four answers' exact bytes, to diff against an earlier build's. PAGE_JSON_TEXT=on|off picks the
 * path of a task page's parts (JSON text written by PostgreSQL, or objects; by default the
 * runtime's), and PAGE_JSON_TEXT=compare measures both in the same run: a second gateway on the
 * same database, windows alternating, every answer of one checked byte-equal to the other's.
 */
const CALLBACKS = Number(process.env.PAGE_CALLBACKS ?? 10_000)
const WINDOWS = Number(process.env.PAGE_WINDOWS ?? 3)
const WINDOW_MS = Number(process.env.PAGE_WINDOW_MS ?? 5000)
const CONNECTIONS = Number(process.env.PAGE_CONNECTIONS ?? 16)
const TASKS = 1000
const JSON_TEXT = process.env.PAGE_JSON_TEXT ?? 'default'

function request(variables: Record<string, unknown>): LoadRequest {
  const bytes = Buffer.from(JSON.stringify({ operationName: 'TaskPage', query: TASK_PAGE_QUERY, variables }))
  return {
    path: '/graphql',
    headers: { 'content-type': 'application/json', 'content-length': String(bytes.length) },
    body: bytes,
  }
}

async function text(url: string, item: LoadRequest): Promise<string> {
  const response = await fetch(new URL(item.path, url), { method: 'POST', headers: item.headers, body: item.body })
  return response.text()
}

async function seededUrl(): Promise<{ url: string; stop(): Promise<void> }> {
  const given = process.env.PAGE_DATABASE_URL
  const cluster = given ? undefined : await startPrivateCluster()
  const url = given ?? (cluster?.url as string)
  const probe = postgres(url, { max: 1, onnotice: () => {} })
  const [have] = await probe<{ n: string | null }[]>`select to_regclass('tasks')::text as n`
  const seeded = have?.n ? Number((await probe<{ n: string }[]>`select count(*) as n from tasks`)[0]?.n) > 0 : false
  await probe.end()
  if (!seeded) {
    const begun = Date.now()
    const database = await openDatabase({ url, dataDir: MEMORY_DATA_DIR })
    await database.migrate()
    const real = await seedTasks(database, TASKS)
    await growTasks(database.db, real, TASKS, CALLBACKS, 1)
    await foldAndSettle(database)
    await database.close()
    console.error(`page: seeded ${CALLBACKS} callbacks in ${((Date.now() - begun) / 1000).toFixed(0)} s`)
  }
  return { url, stop: async () => cluster?.destroy() }
}

async function main(): Promise<void> {
  const database = await seededUrl()
  const base = {
    databaseUrl: database.url,
    service: { serviceCode: SEED_SERVICE_CODE, secret: 'bench-secret' },
    value: HELD_SETTINGS,
  }
  const compare = JSON_TEXT === 'compare'
  const started = await startBenchGateway({
    ...base,
    ...(JSON_TEXT === 'default' ? {} : { jsonText: JSON_TEXT !== 'off' }),
  })
  const objects = compare ? await startBenchGateway({ ...base, jsonText: false }) : undefined
  const ceiling = await startCeiling(database.url)
  try {
    const url = started.gateway.url
    const pool = [request({ first: 50 })]
    for (let page = 0; page < 2; page++) {
      const cursor = JSON.parse(await text(url, pool.at(-1) as LoadRequest)).data.tasks.pageInfo.endCursor as string
      pool.push(request({ first: 50, after: cursor }))
    }
    pool.push(request({ first: 50, filter: { status: ['LIVE', 'WAITING_RECONNECT'] } }))
    const answers: string[] = []
    for (const item of pool) {
      const [ours, theirs] = [await text(url, item), await text(ceiling.url, item)]
      if (JSON.stringify(JSON.parse(ours)) !== JSON.stringify(JSON.parse(theirs)))
        throw new Error(`livegate and the ceiling differ: ${ours.slice(0, 300)}`)
      if (objects && (await text(objects.gateway.url, item)) !== ours)
        throw new Error('the JSON text path and the object path answer different bytes')
      answers.push(ours)
    }
    if (process.env.PAGE_ANSWERS) writeFileSync(process.env.PAGE_ANSWERS, answers.join('\n'))
    const window = async (target = url) => {
      const before = mainThreadCpuMs()
      const result = await runLoad({
        url: target,
        connections: CONNECTIONS,
        warmupMs: 1000,
        durationMs: WINDOW_MS,
        pool,
        repeat: true,
      })
      return {
        cpuMs: (mainThreadCpuMs() - before) / (result.okTotal + result.failedTotal),
        rps: result.rps,
        failed: result.failedTotal + result.errorsTotal,
      }
    }
    // Unmeasured: V8 compiles the hot paths, the pool opens its connections.
    for (const target of [url, objects?.gateway.url])
      if (target)
        await runLoad({ url: target, connections: CONNECTIONS, warmupMs: 0, durationMs: 3000, pool, repeat: true })
    const paths = objects
      ? [
          { name: 'text', url },
          { name: 'objects', url: objects.gateway.url },
        ]
      : [{ name: JSON_TEXT, url }]
    const figures = new Map<string, number[]>(paths.map((path) => [path.name, []]))
    for (let i = 0; i < WINDOWS; i++) {
      // Alternating, the first path turn about, so a drift of the machine falls on both.
      for (const path of i % 2 === 0 ? paths : [...paths].reverse()) {
        const figure = await window(path.url)
        figures.get(path.name)?.push(figure.cpuMs)
        console.error(
          `page: window ${i + 1} (${path.name}): ${figure.cpuMs.toFixed(2)} ms Node CPU per page, ${figure.rps.toFixed(0)}` +
            ` pages/s, ${figure.failed} failed`,
        )
      }
    }
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN
    for (const [name, values] of figures) {
      const sorted = [...values].sort((a, b) => a - b)
      console.log(
        `page${paths.length > 1 ? ` (${name})` : ''}: median ${median(values).toFixed(2)} ms, min ${sorted[0]?.toFixed(2)}` +
          ` ms, max ${sorted.at(-1)?.toFixed(2)} ms Node CPU per page (${Buffer.byteLength(answers[0] ?? '')}` +
          ` bytes, Node ${process.version})`,
      )
    }
    if (objects) {
      const ratios = (figures.get('text') ?? []).map(
        (value, i) => value / ((figures.get('objects') ?? [])[i] ?? Number.NaN),
      )
      console.log(
        `page: JSON text path / object path, Node CPU per page: median ${median(ratios).toFixed(3)}× (windows ${ratios.map((ratio) => ratio.toFixed(3)).join(', ')}` +
          `)`,
      )
    }
    if (process.env.PAGE_PROFILE) {
      const session = new Session()
      session.connect()
      await session.post('Profiler.enable')
      await session.post('Profiler.setSamplingInterval', { interval: 200 })
      await session.post('Profiler.start')
      await window()
      const { profile } = await session.post('Profiler.stop')
      writeFileSync(process.env.PAGE_PROFILE, JSON.stringify(profile))
      session.disconnect()
    }
  } finally {
    await ceiling.close()
    await objects?.close()
    await started.close()
    await database.stop()
  }
}

await main()
