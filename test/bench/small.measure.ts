import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { startBuildGateway, THIS_BUILD } from './build.gateway.js'
import { runLoad } from './load.generate.js'
import { mainThreadCpuMs } from './process.cpu.js'
import { SMALL_QUERY } from './query.bench.js'
import { SEED_SERVICE_CODE } from './query.seed.js'

/**
 * `tsx test/bench/small.measure.ts`: the small query's Node CPU per request (this process's main
 * thread; the load runs elsewhere), for this build and, with SMALL_BUILDS=/a,/b, other builds'
 * compiled dist/ loaded into the same process, their windows alternating so a drift of a busy
 * machine falls on each. STATEMENTS_DATABASE_URL names a database seeded by statements.measure.ts.
 * SMALL_WINDOWS (8) windows of SMALL_WINDOW_MS (3000) each; SMALL_PROFILE=file.cpuprofile adds a
 * window of the first build under V8's profiler.
 */
const URL_ = process.env.STATEMENTS_DATABASE_URL
const BUILDS = (process.env.SMALL_BUILDS ?? THIS_BUILD).split(',')
const WINDOWS = Number(process.env.SMALL_WINDOWS ?? 8)
const WINDOW_MS = Number(process.env.SMALL_WINDOW_MS ?? 3000)

if (!URL_) throw new Error('STATEMENTS_DATABASE_URL names the database to measure on')
const bytes = Buffer.from(JSON.stringify({ operationName: 'TaskList', query: SMALL_QUERY, variables: { first: 20 } }))
const pool = [
  {
    path: '/graphql',
    headers: { 'content-type': 'application/json', 'content-length': String(bytes.length) },
    body: bytes,
  },
]
const gateways = []
for (const build of BUILDS) {
  gateways.push({
    build,
    started: await startBuildGateway(build, {
      databaseUrl: URL_,
      service: { serviceCode: SEED_SERVICE_CODE, secret: 'bench-secret' },
      value: { retention: { intervalMs: 0 } },
    }),
  })
}
const window = async (url: URL | string, durationMs: number) => {
  const before = mainThreadCpuMs()
  const result = await runLoad({ url: String(url), connections: 16, warmupMs: 0, durationMs, pool, repeat: true })
  const n = result.okTotal + result.failedTotal
  return { cpuMs: (mainThreadCpuMs() - before) / n, rps: result.rps, failed: result.failedTotal + result.errorsTotal }
}
try {
  for (const { started } of gateways) await window(started.gateway.url, 1500)
  const figures = new Map<string, number[]>(BUILDS.map((build) => [build, []]))
  for (let i = 0; i < WINDOWS; i++) {
    for (const { build, started } of i % 2 === 0 ? gateways : [...gateways].reverse()) {
      const figure = await window(started.gateway.url, WINDOW_MS)
      figures.get(build)?.push(figure.cpuMs)
      console.error(
        `small: window ${i + 1} (${build}): ${figure.cpuMs.toFixed(3)} ms Node CPU per request, ${figure.rps.toFixed(0)}` +
          ` req/s, ${figure.failed} failed`,
      )
    }
  }
  for (const [build, values] of figures) {
    const sorted = [...values].sort((a, b) => a - b)
    console.log(
      `small (${build}): median ${sorted[Math.floor(sorted.length / 2)]?.toFixed(3)} ms, min ${sorted[0]?.toFixed(3)}` +
        `, max ${sorted.at(-1)?.toFixed(3)} ms Node CPU per request (Node ${process.version})`,
    )
  }
  if (process.env.SMALL_PROFILE && gateways[0]) {
    const session = new Session()
    session.connect()
    await session.post('Profiler.enable')
    await session.post('Profiler.setSamplingInterval', { interval: 200 })
    await session.post('Profiler.start')
    await window(gateways[0].started.gateway.url, WINDOW_MS)
    const { profile } = await session.post('Profiler.stop')
    writeFileSync(process.env.SMALL_PROFILE, JSON.stringify(profile))
    session.disconnect()
  }
} finally {
  for (const { started } of gateways) await started.close()
}
