import { alertRules, type AlertRuleFile } from '../../src/config/alerts.schema.js'
import { evaluateRules, type TaskReading, type Tracks } from '../../src/fold/alert.evaluator.js'
import { type LiveTask, sampleAnswer } from '../../src/fold/answer.sample.js'
import { taskHealth } from '../../src/fold/task.health.js'
import { taskListAnswerSchema } from '../../src/model/task-list.schema.js'
import { generateScenario } from '../../src/simulator/session.scenario.js'
import { type SimulatedTask, taskListAt } from '../../src/simulator/task-list.snapshot.js'
import { taskListEvidence } from '../../src/work/graph/graph.evidence.js'
import { FOR_MS, type HourFigures, hourScenario, playHour, POLL_MS } from './alerts.hour.js'
import { type BenchContext, type BenchSection, quantile, ratio } from './bench.report.js'

/**
 * `alerts`: the targets for alert rules. Detection, latency, quiet reconnects and
 * duplicates over a simulated hour (alerts.hour.ts, in simulated time through the pure parts);
 * the cost of 100 rules over 10k live tasks in Node CPU, against the same poll pass without rules,
 * the two taking turns in this process.
 */

const TASKS = 10_000
const RULES = 100
const ROUNDS = 12

// 100 rules as a busy deployment might have them, every one watching every code (the worst case).
function hundredRules(): AlertRuleFile[] {
  const kinds: Array<Omit<AlertRuleFile, 'name' | 'for' | 'serviceCodes' | 'severity'>> = [
    { when: 'task.health', is: ['STARVING'] },
    { when: 'task.viewers', below: 5 },
    { when: 'task.inputBitrate', below: 300_000 },
    { when: 'task.health', is: ['RECONNECTING', 'UNKNOWN'] },
    { when: 'service.viewers', below: 100 },
  ]
  return Array.from({ length: RULES }, (_, i) => ({
    ...(kinds[i % kinds.length] as AlertRuleFile),
    name: `rule-${i}`,
    for: 20_000 + i * 1000,
    serviceCodes: '*',
    severity: 'WARNING',
  }))
}

// Two answers of one code 5 s apart listing 10k tasks, from the simulator's own tasks, each id its own.
function answers(): [string, string] {
  const scenario = generateScenario({
    seed: 5,
    sessions: 64,
    serviceCodes: ['BIG'],
    rate: 4,
    epochMs: 0,
    audience: true,
  })
  const base: SimulatedTask[] = scenario.sessions.flatMap((session) => {
    const mid = (session.liveFromMs + session.listedUntilMs) / 2
    return taskListAt(scenario, 'BIG', mid).task_list.filter((task) => task.id === session.taskId)
  })
  const at = (step: number) => ({
    ret: 0,
    user_list: [],
    task_list: Array.from({ length: TASKS }, (_, i) => {
      const task = base[i % base.length] as SimulatedTask
      return { ...task, id: `${task.id}-${i}`, input_bytes: task.input_bytes + step * (i % 97 === 0 ? 0 : 400_000) }
    }),
  })
  return [JSON.stringify(at(0)), JSON.stringify(at(1))]
}

/** The Node side of one poll pass: read the answer, fold its evidence, sample it. */
function pollPass(body: string, at: number, before: Map<string, LiveTask>): LiveTask[] {
  const answer = taskListAnswerSchema.parse(JSON.parse(body))
  taskListEvidence('BIG', answer, new Date(at))
  return sampleAnswer('BIG', answer, at, before, new Map(), 20_000).live
}

/** The Node side of the watch's pass that sample wakes: each task's reading, then every rule. */
function watchPass(rules: ReturnType<typeof alertRules>, live: LiveTask[], tracks: Tracks, at: number) {
  const tasks: TaskReading[] = live.map((row) => {
    const sampled = { health: row.health, since: row.since }
    const view = taskHealth({ status: 'LIVE', listed: true, endedAt: null, waitingSince: null, sampled, stale: false })
    return {
      serviceCode: 'BIG',
      taskId: row.taskId,
      health: view.state,
      healthSince: view.since,
      viewers: row.viewers,
      inputBitrate: 800_000,
    }
  })
  const services = [{ serviceCode: 'BIG', viewers: 50_000, stale: false, staleSince: null, callbacksMissing: 0 }]
  return evaluateRules(rules, { tasks, services }, [], tracks, at).tracks
}

function cpuMs(run: () => void): number {
  const before = process.cpuUsage()
  run()
  const used = process.cpuUsage(before)
  return (used.user + used.system) / 1000
}

interface CostFigures {
  passMs: number
  withRulesMs: number
  ratio: number
}

function cost(log: (line: string) => void): CostFigures {
  const rules = alertRules({ rules: hundredRules() })
  const [first, second] = answers()
  const plain: number[] = []
  const ruled: number[] = []
  let tracks: Tracks = new Map()
  for (let round = 0; round < ROUNDS; round++) {
    // Each round from the same first answer, so every pass samples the same step.
    const before = new Map(pollPass(first, 0, new Map()).map((row) => [row.taskId, row]))
    plain.push(cpuMs(() => pollPass(second, 5000, before)))
    ruled.push(
      cpuMs(() => {
        const live = pollPass(second, 5000, before)
        tracks = watchPass(rules, live, tracks, 5000 + round)
      }),
    )
  }
  // The first two rounds warm the JIT; the median of the rest.
  const median = (values: number[]) =>
    quantile(
      values.slice(2).sort((a, b) => a - b),
      0.5,
    )
  const figures = { passMs: median(plain), withRulesMs: median(ruled), ratio: median(ruled) / median(plain) }
  log(
    `alerts: a poll pass of ${TASKS} tasks ${figures.passMs.toFixed(1)} ms CPU, with ${RULES} rules ${figures.withRulesMs.toFixed(1)}` +
      ` ms`,
  )
  return figures
}

const p95 = (values: number[]) =>
  quantile(
    [...values].sort((a, b) => a - b),
    0.95,
  )

export async function runAlertsBench(ctx: BenchContext): Promise<BenchSection> {
  const hour: HourFigures = playHour(hourScenario(11))
  const latencies = Object.values(hour.kinds).flatMap((kind) => kind.latencies)
  const notStale = Object.entries(hour.kinds).flatMap(([name, kind]) => (name === 'stale-list' ? [] : kind.latencies))
  const bound = FOR_MS + POLL_MS + 1000
  ctx.log(`alerts: ${hour.detected}/${hour.faults} faults found over ${hour.passes} passes; p95 ${p95(latencies)} ms`)
  const spent = cost(ctx.log)
  const rows = Object.entries(hour.kinds).map(([name, kind]) => [
    name,
    `${kind.detected}/${kind.faults}`,
    `${p95(kind.latencies)} ms`,
    `${Math.max(...kind.latencies)} ms`,
  ])
  rows.push([
    'reconnects resumed within `for`',
    `${hour.reconnects} played`,
    `${hour.reconnectIncidents} incidents`,
    '',
  ])
  rows.push([
    'a poll pass of 10k tasks, Node CPU',
    `${spent.passMs.toFixed(1)} ms`,
    `with ${RULES} rules ${spent.withRulesMs.toFixed(1)} ms`,
    ratio(spent.withRulesMs, spent.passMs),
  ])
  const detection = hour.detected / hour.faults
  const interrupted = Object.values(hour.kinds).reduce((sum, kind) => sum + (kind.interrupted ?? 0), 0)
  return {
    title: 'Alerts',
    description:
      `A simulated hour (${hour.sessions} tasks on 3 codes, the simulator's faults with their ground truth, ` +
      `fault.plan.ts) played in simulated time through livegate's pure parts: ` +
      `each poll's answer (every ${POLL_MS / 1000} s) sampled by the fold, the callbacks due folded into each ` +
      `task's life, the rules decided at every poll and every second, \`for\` ${FOR_MS / 1000} s. ` +
      "Latency is from the fault beginning in the cloud's data to the opening decision; the database and the " +
      "webhook's delivery are not in it. " +
      `A stale list begins when its signal says so (its last success + staleAfterMs); ${interrupted} task faults ` +
      `a reconnect broke inside their first \`for\` ` +
      '(RECONNECTING is not STARVING: the rule rightly waits its `for` again) count for detection and not for ' +
      'latency. ' +
      `${hour.masked} task faults fell while their code's list was stale (nothing to see) and are not counted. ` +
      `Cost: the Node CPU of a poll pass of ${TASKS} tasks (JSON, schema, evidence, samples) with and without ` +
      `the watch's pass over ${RULES} rules ` +
      "(readings and the evaluator), median of the rounds after two of warm-up; the database's reads of the " +
      'watch are not in it.',
    columns: ['fault', 'found', 'p95', 'max'],
    rows,
    targets: [
      {
        name: 'faults detected',
        target: '≥ 99%',
        measured: `${(detection * 100).toFixed(1)}% of ${hour.faults}`,
        met: detection >= 0.99 && hour.faults >= 200,
      },
      {
        name: 'p95 fault to incident.opened',
        target: `≤ ${bound} ms`,
        measured: `${p95(latencies)} ms (${p95(notStale)} ms without stale lists)`,
        met: p95(latencies) <= bound,
      },
      {
        name: 'incidents for reconnects within `for`',
        target: '0',
        measured: String(hour.reconnectIncidents),
        met: hour.reconnectIncidents === 0,
      },
      { name: 'duplicate incidents', target: '0', measured: String(hour.duplicates), met: hour.duplicates === 0 },
      {
        name: `${RULES} rules over ${TASKS} tasks, poll pass Node CPU`,
        target: '≤ 1.10×',
        measured: ratio(spent.withRulesMs, spent.passMs),
        met: spent.ratio <= 1.1,
      },
    ],
    notes: `Incidents no fault explains: ${hour.unexplained}.`,
    data: { hour, cost: spent },
  }
}
