import {
  DEFAULT_EPOCH_MS,
  type Scenario,
  type ScenarioCallback,
  type ScenarioOptions,
  type ScenarioSession,
  type SessionEnding,
} from './scenario.model.js'
import { archiveFate } from './archive.plan.js'
import { withAudiences } from './audience.plan.js'
import { planServiceFaults } from './fault.plan.js'
import { callbackFields, materialize, type Plan, type Step } from './session.materialize.js'
import { type SeededRandom, seededRandom } from '../model/seeded.random.js'

export type {
  Scenario,
  ScenarioCallback,
  ScenarioOptions,
  ScenarioOutput,
  ScenarioSession,
  SessionEnding,
} from './scenario.model.js'

const AUTHORS = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank', 'grace', 'heidi'] as const
const SIZES = [
  [480, 800],
  [720, 1280],
  [368, 640],
] as const
const VIDEO_BIT_RATES = [600_000, 800_000, 1_200_000] as const
const CONTAINERS = ['flv', 'rtmp', 'm3u8'] as const
// The live of a day's first recorded task, in units: its beats, then its end (27 s in the demo).
const SHORT_LIFE_U = 1.5

/**
 * Generates live sessions and their callbacks, deterministically from the options. The random
 * draws never depend on `epochMs` or `rate`, so the task ids and each task's events are the
 * seed's alone; the rate only spreads them in time.
 */
export function generateScenario(options: ScenarioOptions): Scenario {
  if (!(options.rate > 0)) throw new RangeError('rate must be above 0')
  if (!Number.isInteger(options.sessions) || options.sessions < 0)
    throw new RangeError('sessions must be a whole number')
  if (options.serviceCodes.length === 0 && options.sessions > 0)
    throw new RangeError('at least one service code is needed')
  const epochMs = options.epochMs ?? DEFAULT_EPOCH_MS
  const random = seededRandom(options.seed)
  const endings = chooseEndings(random, options.sessions)
  const taken = new Set<string>()
  const sequences = new Map<string, number>()
  const plans: Plan[] = []
  let startU = 0
  const marathons = Math.min(options.day?.marathons ?? 0, options.sessions)
  for (let i = 0; i < options.sessions; i++) {
    startU += i === 0 ? 0 : random.int(0, 3)
    // A day's marathons go live within the first seconds, a moment apart.
    const from = i < marathons ? i * 0.2 : startU
    plans.push(
      planSession(random, {
        serviceCode: options.serviceCodes[i % options.serviceCodes.length] as string,
        ending: endings[i] as SessionEnding,
        startU: from,
        taken,
        sequences,
      }),
    )
  }
  if (options.day) squeezeIntoTheFirstMinute(plans.slice(marathons), 0)
  if (marathons > 0) stretchToTheEnd(plans.slice(0, marathons), spanOf(plans.slice(marathons)))
  const count = plans.reduce((sum, plan) => sum + plan.steps.length, 0)
  const spanU = spanOf(plans)
  const msPerUnit = options.day
    ? options.day.unitMs
    : count > 0 && spanU > 0
      ? ((count / options.rate) * 1000) / spanU
      : 0
  const toMs = (u: number) => Math.round(u * msPerUnit)
  const sessions: ScenarioSession[] = []
  const callbacks: ScenarioCallback[] = []
  for (const plan of plans) {
    const session = materialize(plan, epochMs, toMs)
    sessions.push(session)
    for (const step of plan.steps) {
      const atMs = toMs(step.u)
      // An archive describes the live that ended, not the moment the file was ready.
      const fields = callbackFields(session, plan, step, atMs, step.kind === 'archive' ? toMs(plan.at.end) : atMs)
      callbacks.push({
        atMs,
        type: Number(fields.type),
        serviceCode: session.serviceCode,
        taskId: session.taskId,
        fields,
      })
    }
  }
  // Stable: equal times keep their generation order, so a task's own callbacks never swap.
  callbacks.sort((a, b) => a.atMs - b.atMs)
  const played = options.audience
    ? withAudiences(sessions, callbacks, options.day?.swayPeriodMs)
    : { sessions, callbacks }
  const durationMs = toMs(spanU)
  const perCode = options.serviceFaults ?? 0
  const planned = perCode > 0 ? planServiceFaults(options.serviceCodes, durationMs, perCode) : undefined
  const serviceFaults = planned ? { serviceFaults: planned } : {}
  return { seed: options.seed, epochMs, ...played, durationMs, ...serviceFaults }
}

/** The last moment anything of these sessions happens, in units. */
function spanOf(plans: Plan[]): number {
  return Math.max(
    0,
    ...plans.flatMap((plan) => [plan.at.listedUntil, plan.at.userUntil, ...plan.steps.map((step) => step.u)]),
  )
}

/**
 * Stretches each plan's live beats so it ends when the others have all ended: its thumbnails and
 * reconnects spread over the whole scenario, and what follows its end (the end callbacks, the
 * archive, a disconnect) keeps its own spacing.
 */
function stretchToTheEnd(plans: Plan[], spanU: number): void {
  for (const plan of plans) {
    const beatsEnd = plan.at.end - 1
    const shift = spanU - plan.at.end
    if (shift <= 0) continue
    const k = (beatsEnd + shift - plan.at.liveFrom) / (beatsEnd - plan.at.liveFrom)
    const moved = (u: number) =>
      u <= plan.at.liveFrom ? u : u <= beatsEnd ? plan.at.liveFrom + (u - plan.at.liveFrom) * k : u + shift
    for (const step of plan.steps) step.u = moved(step.u)
    plan.at.end += shift
    plan.at.listedUntil = moved(plan.at.listedUntil)
    plan.at.userUntil = moved(plan.at.userUntil)
  }
}

/**
 * A day's first recording comes in its first minute, not minutes in: the first task whose file the
 * archive keeps (even with the demo's mishaps) goes live at `startU` and lives a short while, its
 * beats pressed together; only times move, so the seed's tasks and callbacks stay as they were.
 */
function squeezeIntoTheFirstMinute(plans: Plan[], startU: number): void {
  const plan = plans.find(
    (candidate) =>
      candidate.steps.some((step) => step.kind === 'archive') &&
      archiveFate(candidate.session.taskId, true) === 'ANNOUNCED',
  )
  if (!plan) return
  const { userFrom, liveFrom, end } = plan.at
  const beatsEnd = end - 1
  const newLiveFrom = liveFrom - userFrom + startU
  const newEnd = newLiveFrom + SHORT_LIFE_U
  const k = (newEnd - 1 - newLiveFrom) / Math.max(beatsEnd - liveFrom, 1e-9)
  const moved = (u: number) =>
    u <= liveFrom ? u - userFrom + startU : u <= beatsEnd ? newLiveFrom + (u - liveFrom) * k : u - end + newEnd
  for (const step of plan.steps) step.u = moved(step.u)
  plan.at = {
    liveFrom: newLiveFrom,
    end: newEnd,
    listedFrom: moved(plan.at.listedFrom),
    listedUntil: moved(plan.at.listedUntil),
    userFrom: startU,
    userUntil: moved(plan.at.userUntil),
  }
}

function chooseEndings(random: SeededRandom, sessions: number): SessionEnding[] {
  const endings = Array.from({ length: sessions }, (): SessionEnding => {
    const roll = random.next()
    return roll < 0.6 ? 'USER_STOPPED' : roll < 0.8 ? 'ABNORMAL' : 'VANISHED'
  })
  // A small scenario still shows every ending, VANISHED above all: the gateway has a rule for it.
  if (sessions >= 3) {
    const [a, b, c] = random.shuffle(endings.map((_, index) => index))
    endings[a as number] = 'USER_STOPPED'
    endings[b as number] = 'ABNORMAL'
    endings[c as number] = 'VANISHED'
  }
  return endings
}

interface PlanInput {
  serviceCode: string
  ending: SessionEnding
  startU: number
  taken: Set<string>
  sequences: Map<string, number>
}

function planSession(random: SeededRandom, input: PlanInput): Plan {
  const vsNumber = random.int(1, 9)
  const vsId = `xvs-${vsNumber}`
  let taskId: string
  do taskId = `aws-cn_north_1-${vsNumber}-${random.hex(16)}`
  while (input.taken.has(taskId))
  input.taken.add(taskId)
  const sequence = (input.sequences.get(vsId) ?? 0) + 1
  input.sequences.set(vsId, sequence)
  const mobile = random.chance(0.6)
  const liveOnly = random.chance(0.25)
  const chosen = random.shuffle(CONTAINERS).slice(0, random.int(1, 3))
  const containers = CONTAINERS.filter((container) => chosen.includes(container))
  const outputs = containers.map((container, index) => ({
    container,
    tag: liveOnly
      ? index === 0
        ? 'tcp_output_live_only'
        : `${container}_live_only`
      : `${container}_${random.pick(['sd', 'hd'])}`,
    videoBitRate: random.pick(VIDEO_BIT_RATES),
    copy: container === 'rtmp' ? (1 as const) : (0 as const),
  }))
  const author = random.pick(AUTHORS)
  const opaque = random.chance(0.7) ? `room%3D${random.int(1, 99)}%26order%3D${random.int(100, 999)}` : ''
  const host = `${vsId}.live.example`
  const session: Plan['session'] = {
    taskId,
    serviceCode: input.serviceCode,
    vsId,
    author,
    mobile,
    // ctype and cversion mean something only with the mobile SDK; a desktop encoder sends zeros.
    ctype: mobile ? 10 : 0,
    cversion: mobile ? '451' : '0',
    liveOnly,
    opaque,
    ending: input.ending,
    serial: random.int(1000, 99_999),
    sequence,
    httpLiveUrl: `http://${host}:80/live/`,
    // The service's own tcp upload (the mobile SDK) has no source url; a desktop encoder pushes rtmp.
    inputUrl: mobile ? '' : `rtmp://${host}/push/${taskId}`,
    inputBytesPerSecond: Math.round((Math.max(...outputs.map((o) => o.videoBitRate)) + 64_000) / 8),
    viewers: random.int(0, 40),
  }
  const size = random.pick(SIZES)

  const s = input.startU
  const liveFrom = s + 0.5
  const steps: Step[] = outputs.map((_, output) => ({ u: liveFrom, kind: 'start', output }))
  const beats = random.int(2, 6)
  let t = liveFrom
  let thumbnails = 0
  let isResume = false
  for (let beat = 1; beat <= beats; beat++) {
    t += random.int(1, 2)
    if (random.chance(0.7)) steps.push({ u: t, kind: 'thumbnail', n: thumbnails++ })
    // Not on the last beat, so a resume is over before the end's own events begin.
    if (!isResume && beat < beats && random.chance(0.25)) {
      steps.push({ u: t + 0.3, kind: 'waiting' }, { u: t + 0.6, kind: 'resumed' })
      isResume = true
    }
  }
  const endU = t + 1
  const at = {
    liveFrom,
    end: endU,
    listedFrom: s + 0.25,
    listedUntil: endU + 0.25,
    userFrom: s,
    userUntil: endU + 0.25,
  }
  if (input.ending === 'VANISHED') {
    if (random.chance(0.5)) steps.push({ u: endU - 0.5, kind: 'waiting' })
    at.listedUntil = endU
    at.userUntil = endU
  } else {
    const abnormal = input.ending === 'ABNORMAL'
    if (abnormal && random.chance(0.6)) steps.push({ u: endU - 0.5, kind: 'waiting' })
    if (mobile && random.chance(0.6)) {
      const disconnectU = abnormal ? endU - 0.4 : endU + 0.75
      steps.push({ u: disconnectU, kind: 'disconnect', reason: abnormal ? random.pick([0, 2]) : 1 })
      at.userUntil = disconnectU
    }
    for (let output = 0; output < outputs.length; output++)
      steps.push({ u: endU, kind: 'end', output, reachEnd: !abnormal })
    if (!liveOnly) steps.push({ u: endU + 0.5, kind: 'archive' })
  }
  steps.sort((a, b) => a.u - b.u)
  return { session, outputs, size, isResume, steps, at }
}
