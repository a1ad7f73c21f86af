import { startBenchGateway } from './bench.gateway.js'
import type { TargetCheck } from './bench.report.js'
import type { LoadRequest } from './load.generate.js'
import { measureInTurns } from './query.windows.js'

/** What {@link jsonTextTarget} measures on: the query bench's large database and its task page pool. */
export interface JsonTextBench {
  databaseUrl: string
  pool: LoadRequest[]
  service: { serviceCode: string; secret: string }
  value: Record<string, unknown>
  log: (line: string) => void
}

const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 8000)
const WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? 2000)

/**
 * Issue 28's switch figure: the same build's task page with its pure-data parts written by
 * PostgreSQL as JSON text (src/storage/graph/task.json.ts) against the object path, two gateways
 * in this process on the same database, in alternating turns, their answers checked byte-equal
 * first. Node CPU is this process's main thread per page. The text path is on by default where
 * `JSON.rawJSON` exists (Node 22 and later); on Node 20 it is measured all the same, forced on,
 * and the target does not apply.
 */
export async function jsonTextTarget(bench: JsonTextBench): Promise<TargetCheck[]> {
  const base = { databaseUrl: bench.databaseUrl, service: bench.service, value: bench.value }
  const text = await startBenchGateway({ ...base, jsonText: true })
  const objects = await startBenchGateway({ ...base, jsonText: false })
  try {
    for (const request of [...bench.pool, ...bench.pool]) {
      const [a, b] = await Promise.all([answer(text.gateway.url, request), answer(objects.gateway.url, request)])
      if (a !== b) throw new Error(`the JSON text path and the object path answer different bytes: ${a.slice(0, 200)}`)
    }
    const [textFigure, objectFigure] = await measureInTurns(
      [
        { name: 'task page: livegate, JSON text path', url: text.gateway.url, pool: bench.pool },
        { name: 'task page: livegate, object path', url: objects.gateway.url, pool: bench.pool },
      ],
      {
        rounds: 4,
        connections: 16,
        warmupMs: WARMUP_MS,
        durationMs: DURATION_MS,
        postgresPort: new URL(bench.databaseUrl).port,
      },
    )
    if (!textFigure || !objectFigure) throw new Error('no figures')
    const ratio = textFigure.nodeCpuMs / objectFigure.nodeCpuMs
    bench.log(
      `query: task page Node CPU per page on Node ${process.versions.node}: JSON text path
        ${textFigure.nodeCpuMs.toFixed(2)}` +
        ` ms (${textFigure.result.rps.toFixed(0)} pages/s), ` +
        `object path ${objectFigure.nodeCpuMs.toFixed(2)} ms (${objectFigure.result.rps.toFixed(0)} pages/s): ${ratio.toFixed(2)}` +
        `×`,
    )
    const applies = typeof (JSON as { rawJSON?: unknown }).rawJSON === 'function'
    return [
      {
        name:
          `task page Node CPU, JSON.rawJSON path vs object path (Node ${process.versions.node}; the parts as JSON ` +
          `text written by PostgreSQL)`,
        target: applies ? '≤ 0.60×' : 'not applicable on Node 20 (the object path by default)',
        measured: `${ratio.toFixed(2)}× (${textFigure.nodeCpuMs.toFixed(2)} / ${objectFigure.nodeCpuMs.toFixed(2)} ms)`,
        met: applies ? ratio <= 0.6 : true,
      },
    ]
  } finally {
    await text.close()
    await objects.close()
  }
}

async function answer(url: string, request: LoadRequest): Promise<string> {
  const response = await fetch(new URL(request.path, url), {
    method: 'POST',
    headers: request.headers,
    body: request.body,
  })
  return response.text()
}
