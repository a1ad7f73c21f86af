import { CallbackSender, type DeliveryFailure } from './callback.sender.js'
import { CloudActions } from './cloud.actions.js'
import { type ArchivePlan, countsOf, planArchive } from './archive.plan.js'
import type { ListedFile } from './list-files.answer.js'
import type { DayProfile, Scenario } from './scenario.model.js'
import { roundSeed } from '../model/seeded.random.js'
import { generateScenario } from './session.scenario.js'
import { type SimulatedService, startTaskListServer, type TaskListServer } from './task-list.server.js'
import { EMPTY_TASK_LIST, type SimulatedTaskList, taskListAt } from './task-list.snapshot.js'
import { faultsOf, listFaultAt, type PlannedFault } from './fault.plan.js'

/** What {@link startSimulator} plays and where. */
export interface SimulatorOptions {
  /** The task_list port; 0 (the default) takes a free one. */
  port?: number
  host?: string
  /** The service codes played, with the secrets the gateway knows them by. */
  services: readonly SimulatedService[]
  /** The gateway's base URL; without it callbacks are not sent and only task_list is served. */
  gatewayUrl?: string
  /** The callback address below `gatewayUrl`; `/callbacks` unless told. */
  callbackPath?: string
  /** `svc` (the default) or `xvs`, the service's own spelling. */
  headerPrefix?: string
  seed: number
  sessions: number
  /** Average callbacks per second. */
  rate: number
  /** Start a new scenario (a new seed, new task ids) whenever one ends, until stopped. */
  loop?: boolean
  /**
   * Audiences that rise and fall, a stalled input, a counter reset, a forgotten start (see audience.plan.ts); on unless
   * `false`.
   */
  audience?: boolean
  /** Paced like a day (tasks that live minutes, some throughout) instead of packed to `rate`: the demo's. */
  day?: DayProfile
  /** The archive's mishaps: some type 2 callbacks forgotten, some archives never made (archive.plan.ts). */
  archiveMishaps?: boolean
  /**
   * Each code's audience drops away and its list goes stale this many times a round (fault.plan.ts); none if absent.
   */
  serviceFaults?: number
  /** Told of every task_list answer the simulator makes, as it makes it (tests compare it with the samples). */
  onTaskList?: (serviceCode: string, answer: SimulatedTaskList) => void
}

/** What the simulator has done so far. */
export interface SimulatorStats {
  /** Scenarios started; more than one with `loop`. */
  rounds: number
  /** Callbacks whose time has come, whether sent or not. */
  callbacksDue: number
  /** Callbacks POSTed to the gateway. */
  callbacksSent: number
  /** The gateway's answers by HTTP status (`"200"`), and `network` for those that got none. */
  answers: Record<string, number>
  lastFailure: DeliveryFailure | null
  taskListRequests: number
  /** Playback is over: the scenario ended (without `loop`), or the simulator was stopped. */
  finished: boolean
}

/** A running simulator. */
export interface Simulator {
  /** The task_list base URL: the `baseUrl` to give the gateway for these service codes. */
  url: string
  /** The task_list server, with its request counter and fault hooks. */
  server: TaskListServer
  /** The scenario playing now (the last one, once finished). */
  scenario(): Scenario
  /** The archive of the scenario playing now, with each file's fate: the ground truth of `list_files`. */
  archive(): ArchivePlan
  /** The faults of the scenario playing now and when it started (Unix ms): the ground truth of the alert rules. */
  faults(): { startedAtMs: number; faults: PlannedFault[] }
  stats(): SimulatorStats
  /** Resolves when playback is over: the scenario ended (without `loop`) or `stop()` was called. */
  done: Promise<SimulatorStats>
  /** Stops playback and the task_list server. */
  stop(): Promise<SimulatorStats>
}

// A looping run of an empty scenario would otherwise start rounds as fast as it can.
const MIN_LOOP_ROUND_MS = 1000

/**
 * Plays the live-streaming cloud: runs a seeded scenario in real time, spread to `rate`
 * callbacks per second, answers task_list with what is live at each moment, and POSTs each
 * callback, signed with its service's secret, to `${gatewayUrl}/callbacks`.
 */
export async function startSimulator(options: SimulatorOptions): Promise<Simulator> {
  if (options.services.length === 0) throw new RangeError('the simulator needs at least one service code with a secret')
  const serviceCodes = options.services.map((service) => service.serviceCode)
  const scenarioAt = (round: number, epochMs: number) =>
    generateScenario({
      seed: roundSeed(options.seed, round),
      sessions: options.sessions,
      serviceCodes,
      rate: options.rate,
      epochMs,
      audience: options.audience ?? true,
      ...(options.day ? { day: options.day } : {}),
      ...(options.serviceFaults ? { serviceFaults: options.serviceFaults } : {}),
    })
  // Generating once checks the options before anything listens; playback generates it again at its start.
  const mishaps = options.archiveMishaps ?? false
  const initial = scenarioAt(0, Date.now())
  let current = {
    scenario: initial,
    startedAtMs: Number.POSITIVE_INFINITY,
    shown: new Set<string>(),
    archive: planArchive(initial, mishaps),
  }
  // Files of earlier rounds stay in the archive, with the time they were listed from.
  const pastFiles: Array<{ file: ArchivePlan['files'][number]; listedAtMs: number }> = []
  const filesOf = (serviceCode: string): ListedFile[] => {
    const now = Date.now()
    const { archive, startedAtMs } = current
    const present = archive.files
      .filter((file) => now - startedAtMs >= file.listedFromMs)
      .map((file) => ({ file, listedAtMs: startedAtMs + file.listedFromMs }))
    return [...pastFiles, ...present]
      .filter(({ file }) => file.serviceCode === serviceCode)
      .map(({ file, listedAtMs }) => {
        const { views, likes } = countsOf(file, now - listedAtMs)
        return {
          file_name: file.fileName,
          created_at: file.createdAt,
          duration: file.duration,
          width: file.width,
          height: file.height,
          user_name: file.userName,
          description: file.description,
          url: file.url,
          location: file.location,
          access_cnt: views,
          zan_cnt: likes,
        }
      })
  }

  const sender = options.gatewayUrl
    ? new CallbackSender({
        gatewayUrl: options.gatewayUrl,
        services: options.services,
        ...(options.callbackPath !== undefined ? { path: options.callbackPath } : {}),
        ...(options.headerPrefix !== undefined ? { headerPrefix: options.headerPrefix } : {}),
      })
    : undefined
  const cloud = new CloudActions(sender ? (callback) => sender.deliver(callback) : undefined)

  const server = await startTaskListServer({
    services: options.services,
    source: (serviceCode) => {
      const { scenario, startedAtMs, shown } = current
      const answer =
        Date.now() < startedAtMs
          ? EMPTY_TASK_LIST
          : taskListAt(scenario, serviceCode, Date.now() - startedAtMs, (taskId) => !shown.has(taskId))
      for (const task of answer.task_list) shown.add(task.id)
      const live = answer.task_list.some((task) => cloud.isStopped(task.id))
        ? { ...answer, task_list: answer.task_list.filter((task) => !cloud.isStopped(task.id)) }
        : answer
      options.onTaskList?.(serviceCode, live)
      return live
    },
    onAction: (operation, params) => cloud.handle(operation, params),
    planned: (serviceCode) => listFaultAt(current.scenario, serviceCode, Date.now() - current.startedAtMs),
    files: filesOf,
    ...(options.port !== undefined ? { port: options.port } : {}),
    ...(options.host !== undefined ? { host: options.host } : {}),
  })
  const pacer = new Pacer()
  let rounds = 0
  let callbacksDue = 0
  let finished = false

  const play = async (): Promise<void> => {
    for (let round = 0; round === 0 || options.loop; round++) {
      const startedAtMs = Date.now()
      if (round > 0)
        for (const file of current.archive.files)
          pastFiles.push({ file, listedAtMs: current.startedAtMs + file.listedFromMs })
      // A long demo keeps its newest files; list_files asks for the newest anyway.
      if (pastFiles.length > 5000) pastFiles.splice(0, pastFiles.length - 5000)
      const scenario = scenarioAt(round, startedAtMs)
      current = { scenario, startedAtMs, shown: new Set<string>(), archive: planArchive(scenario, mishaps) }
      cloud.playing(current)
      rounds++
      // The callbacks the cloud sends: without the type 2 it forgets or never has.
      for (const callback of current.archive.callbacks) {
        if (!(await pacer.until(startedAtMs + callback.atMs))) return
        callbacksDue++
        // A stopped task sent its ends when it stopped, and sends nothing more.
        if (callback.taskId && cloud.isStopped(callback.taskId)) continue
        if (sender) await sender.deliver(callback)
      }
      const lasts = options.loop
        ? Math.max(current.scenario.durationMs, MIN_LOOP_ROUND_MS)
        : current.scenario.durationMs
      if (!(await pacer.until(startedAtMs + lasts))) return
    }
  }

  const stats = (): SimulatorStats => {
    const delivered = sender?.stats()
    return {
      rounds,
      callbacksDue,
      callbacksSent: delivered?.sent ?? 0,
      answers: delivered?.answers ?? {},
      lastFailure: delivered?.lastFailure ?? null,
      taskListRequests: server.requests,
      finished,
    }
  }
  const done = play().then(() => {
    finished = true
    return stats()
  })
  let stopping: Promise<SimulatorStats> | undefined

  return {
    url: server.url,
    server,
    scenario: () => current.scenario,
    archive: () => current.archive,
    faults: () => ({ startedAtMs: current.startedAtMs, faults: faultsOf(current.scenario) }),
    stats,
    done,
    stop() {
      stopping ??= (async () => {
        pacer.stop()
        await done
        await server.close()
        return stats()
      })()
      return stopping
    },
  }
}

/** Waits until a wall-clock time, unless stopped first. */
class Pacer {
  private stopped = false
  private readonly wakers = new Set<() => void>()

  /** Resolves true at `atMs`, or false as soon as the pacer is stopped. */
  until(atMs: number): Promise<boolean> {
    if (this.stopped) return Promise.resolve(false)
    const delay = atMs - Date.now()
    if (delay <= 0) return Promise.resolve(true)
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wakers.delete(wake)
        resolve(true)
      }, delay)
      const wake = () => {
        clearTimeout(timer)
        resolve(false)
      }
      this.wakers.add(wake)
    })
  }

  stop(): void {
    this.stopped = true
    for (const wake of this.wakers) wake()
    this.wakers.clear()
  }
}
