import { availableParallelism } from 'node:os'
import { type BenchContext, type BenchSection, ms, ratio, type TargetCheck } from './bench.report.js'
import {
  CONNECTIONS,
  ingestRounds,
  LAG_MS,
  type Lag,
  lagAtRate,
  ROUNDS,
  WARMUP_MS,
  WINDOW_MS,
  WORKERS,
  type WorkerFigures,
  withWorkers,
} from './delivery.ingest.js'
import { measureOutage, type Outage } from './delivery.outage.js'
import { type BenchReceiver, startBenchReceiver } from './delivery.receiver.js'
import { type DatabaseKind, type Rig, startRig } from './delivery.rig.js'
import { measureThroughput, type Throughput } from './delivery.throughput.js'

// Delivery's own, each scaled down for a quick check.
const THROUGHPUT_EVENTS = Number(process.env.BENCH_DELIVERY_EVENTS ?? 5000)
const OUTAGE_MS = Number(process.env.BENCH_DELIVERY_OUTAGE_MS ?? 60_000)
const OUTAGE_EVENTS = Number(process.env.BENCH_DELIVERY_OUTAGE_EVENTS ?? 10_000)
const DATABASES = (process.env.BENCH_DELIVERY_DATABASES ?? 'PostgreSQL,PGlite')
  .split(',')
  .map((name) => name.trim()) as DatabaseKind[]
// Retries a sixth of the outage apart (1 to 10 s), fifty of them: the line comes back within a step of the receiver.
const RETRY_STEP_MS = Math.min(10_000, Math.max(1000, Math.round(OUTAGE_MS / 6)))
const LAG_TARGET_MS = 200

/** One database's figures. */
interface DatabaseFigures {
  kind: DatabaseKind
  ingest: { none: number; three: number }
  lag: Lag
  throughput: Throughput
  outage: Outage
  /** The same ingest and lag with `serve --workers N` processes, each way of delivering (a server only). */
  workers: WorkerFigures[]
}

async function onDatabase(
  ctx: BenchContext,
  kind: DatabaseKind,
  three: BenchReceiver[],
  one: BenchReceiver,
): Promise<DatabaseFigures> {
  const rigs: Rig[] = []
  try {
    const none = await startRig(ctx, kind, [])
    rigs.push(none)
    const fanned = await startRig(
      ctx,
      kind,
      three.map((receiver, i) => ({ name: `e${i + 1}`, receiver })),
    )
    rigs.push(fanned)
    const ingest = await ingestRounds(ctx, none, fanned, three)
    // Half the rate livegate just sustained with its three endpoints: the load it should deliver promptly at.
    const lag = await lagAtRate(ctx, fanned, three, ingest.three / 2)
    for (const rig of rigs.splice(0)) await rig.close()
    const workers: WorkerFigures[] = []
    if (kind === 'PostgreSQL' && WORKERS > 1)
      for (const ownWorker of [true, false]) {
        workers.push(await withWorkers(ctx, three, rigs, ownWorker))
        for (const rig of rigs.splice(0)) await rig.close()
      }
    // Attempts outlast a hold of the whole line; retries come a sixth of the outage apart.
    const single = await startRig(ctx, kind, [{ name: 'one', receiver: one, events: ['callback.*'] }], {
      timeoutMs: 120_000,
      retrySchedule: Array.from({ length: 50 }, () => RETRY_STEP_MS),
    })
    rigs.push(single)
    const throughput = await measureThroughput(ctx, single, one, THROUGHPUT_EVENTS, ROUNDS)
    const outage = await measureOutage(ctx, single, one, OUTAGE_EVENTS, OUTAGE_MS)
    return { kind, ingest, lag, throughput, outage, workers }
  } finally {
    for (const rig of rigs) await rig.close()
  }
}

function rows(f: DatabaseFigures): string[][] {
  const o = f.outage
  const workerRows = f.workers.flatMap((w) => [
    [`ingest, ${w.setup}, no endpoint (${f.kind})`, `${w.ingest.none.toFixed(0)} req/s`, '—'],
    [
      `ingest, ${w.setup}, three endpoints (${f.kind})`,
      `${w.ingest.three.toFixed(0)} req/s`,
      ratio(w.ingest.three, w.ingest.none),
    ],
    [
      `delivery lag at ${w.lag.rate.toFixed(0)} callbacks/s, ${w.setup} (${f.kind})`,
      `p50 ${ms(w.lag.p50Ms)} ms, p99 ${ms(w.lag.p99Ms)} ms over ${w.lag.samples}`,
      '—',
    ],
  ])
  return [
    [`ingest, no endpoint (${f.kind})`, `${f.ingest.none.toFixed(0)} req/s`, '—'],
    [
      `ingest, three endpoints on fast receivers (${f.kind})`,
      `${f.ingest.three.toFixed(0)} req/s`,
      ratio(f.ingest.three, f.ingest.none),
    ],
    [
      `delivery to one fast receiver, bare loop (${f.kind})`,
      `${f.throughput.bare.perSecond.toFixed(0)}/s, ${f.throughput.bare.cpuUsPerDelivery.toFixed(0)} µs Node CPU each`,
      '—',
    ],
    [
      `delivery to one fast receiver, livegate (${f.kind})`,
      `${f.throughput.livegate.perSecond.toFixed(0)}/s, ${f.throughput.livegate.cpuUsPerDelivery.toFixed(0)} µs ` +
        `Node CPU each`,
      ratio(f.throughput.livegate.perSecond, f.throughput.bare.perSecond),
    ],
    [
      `delivery lag at ${f.lag.rate.toFixed(0)} callbacks/s (${f.kind})`,
      `p50 ${ms(f.lag.p50Ms)} ms, p99 ${ms(f.lag.p99Ms)} ms over ${f.lag.samples}`,
      '—',
    ],
    [
      `receiver down ${(o.outageMs / 1000).toFixed(0)} s, ${o.events} waiting (${f.kind})`,
      `${o.delivered} delivered, the last ${(o.afterReturnMs / 1000).toFixed(1)} s after its return; ${o.duplicates}` +
        ` duplicates, ${o.lostAnswers} answers lost, ${o.failedAttempts} failed attempts, ${o.dead} dead`,
      '—',
    ],
    ...workerRows,
  ]
}

function targets(f: DatabaseFigures): TargetCheck[] {
  const o = f.outage
  const workerTargets: TargetCheck[] = f.workers.flatMap((w) => [
    {
      name: `ingest with three endpoints ÷ with none, ${w.setup} (${f.kind})`,
      target: '≥ 0.90×',
      measured: ratio(w.ingest.three, w.ingest.none),
      met: w.ingest.three >= 0.9 * w.ingest.none,
    },
    {
      name: `delivery lag p99 at half the maximum ingest rate, ${w.setup} (${f.kind})`,
      target: `≤ ${LAG_TARGET_MS} ms`,
      measured: `${ms(w.lag.p99Ms)} ms`,
      met: w.lag.p99Ms <= LAG_TARGET_MS,
    },
  ])
  return [
    {
      name: `ingest with three endpoints ÷ with none (${f.kind})`,
      target: '≥ 0.90×',
      measured: ratio(f.ingest.three, f.ingest.none),
      met: f.ingest.three >= 0.9 * f.ingest.none,
    },
    {
      name: `delivery throughput ÷ bare delivery loop (${f.kind})`,
      target: '≥ 0.70×',
      measured: ratio(f.throughput.livegate.perSecond, f.throughput.bare.perSecond),
      met: f.throughput.livegate.perSecond >= 0.7 * f.throughput.bare.perSecond,
    },
    {
      name: `delivery lag p99 at half the maximum ingest rate (${f.kind})`,
      target: `≤ ${LAG_TARGET_MS} ms`,
      measured: `${ms(f.lag.p99Ms)} ms`,
      met: f.lag.p99Ms <= LAG_TARGET_MS,
    },
    {
      name: `receiver down ${(o.outageMs / 1000).toFixed(0)} s with ${o.events} waiting (${f.kind})`,
      target: '100% delivered after it returns, duplicates ≤ answers lost',
      measured:
        `${((100 * o.delivered) / o.events).toFixed(2)}%, ${o.duplicates}` +
        ` duplicates, ${o.lostAnswers} answers lost`,
      met: o.delivered === o.events && o.dead === 0 && o.duplicates <= o.lostAnswers,
    },
    ...workerTargets,
  ]
}

/**
 * Delivery: the webhook issue's four targets, on the bench's PostgreSQL server and on PGlite in
 * memory, each judged against a baseline measured in the same run (ingest with no endpoint, a bare
 * delivery loop) or against a fixed bound (lag, outage). Receivers are processes of their own.
 */
export async function runDeliveryBench(ctx: BenchContext): Promise<BenchSection> {
  const three = await Promise.all([startBenchReceiver(), startBenchReceiver(), startBenchReceiver()])
  const one = await startBenchReceiver()
  const figures: DatabaseFigures[] = []
  try {
    for (const kind of DATABASES) figures.push(await onDatabase(ctx, kind, three, one))
  } finally {
    for (const receiver of [...three, one]) await receiver.stop()
  }
  return {
    title: 'Delivery',
    description:
      `Webhooks on ${availableParallelism()} cores, Node ${process.version}. Each receiver is a node:http ` +
      `process of its own on loopback answering 204 at once (it reads the body, verifies nothing). ` +
      `Ingest: the ingest part's load (${CONNECTIONS} keep-alive connections, signed callbacks of every type, ` +
      `each distinct) in ${ROUNDS} interleaved rounds of ${WARMUP_MS / 1000} s warm-up and ${WINDOW_MS / 1000} s ` +
      `measured, ` +
      'against a gateway with no endpoint and one with three endpoints (every event type) on three receivers; ' +
      'after each window the projection and the deliveries are settled before the next. ' +
      `Throughput: ${THROUGHPUT_EVENTS} callbacks put in line for one endpoint while its receiver holds its ` +
      `answers, then timed from the answers' release until every outcome is stored; ` +
      "the bare loop (no livegate code: postgres.js or PGlite, `standardwebhooks`, Node's fetch over keep-alive, " +
      '16 in flight, a batch marked delivered per statement) gets the same bodies and is timed from its first ' +
      'read to its last mark, the two taking turns each round. ' +
      "Node CPU is the bench thread's (the gateway and the bare loop both run in it). " +
      `Lag: from the callback's arrival at livegate (its \`receivedAt\`, just before its commit: an upper bound) ` +
      `to its arrival at the receiver, at half the rate ingest sustained with three endpoints, paced, for ${LAG_MS / 1000}` +
      ` s. ` +
      `Outage: the receiver stops listening and cuts its connections, ${OUTAGE_EVENTS} callbacks are ingested, ` +
      `and it listens again ${OUTAGE_MS / 1000} s after it went; retries are ${RETRY_STEP_MS / 1000} s apart ` +
      `(±20%). ` +
      `On the server, ingest and lag are measured again with \`serve --workers ${WORKERS}\` processes (one per ` +
      'core), the load spread over their workers, each way: a webhook worker of its own (on no port) delivering ' +
      'for the HTTP workers (`webhooks.ownWorker`, the default), and every HTTP worker delivering. ' +
      'A duplicate is a request of an id the receiver already had; an answer lost is a request it read whose ' +
      'answer never left.',
    columns: ['figure', 'measured', 'ratio'],
    rows: figures.flatMap(rows),
    targets: figures.flatMap(targets),
    data: figures,
  }
}
