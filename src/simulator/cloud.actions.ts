import type { Scenario, ScenarioCallback } from './scenario.model.js'
import { SIMULATOR_RETS, type SimulatedOperation } from './cloud.answers.js'

/** The scenario playing now and when it started (Unix ms); the simulator swaps it each round. */
export interface PlayingRound {
  scenario: Scenario
  startedAtMs: number
}

/**
 * The cloud's side of the actions (operations.md): `cancel_task` stops a running task, which then
 * leaves the task list and sends its end callbacks (type 1, one per output) with `reach_end=0`, as
 * a server-side stop does; `send_txt_msg` delivers to a user the service code has. Whatever the
 * cloud does not have answers a non-zero `ret`. Stops last for the round they were made in.
 */
export class CloudActions {
  private stopped = new Map<string, number>()
  private round: PlayingRound | undefined

  constructor(
    /** Sends a callback to the gateway, when the simulator has one. */
    private readonly deliver: ((callback: ScenarioCallback) => Promise<unknown>) | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  /** A new round plays: earlier stops are forgotten with their task ids. */
  playing(round: PlayingRound): void {
    this.round = round
    this.stopped = new Map()
  }

  /** Whether the task was stopped (its later callbacks are not sent, the list leaves it out). */
  isStopped(taskId: string): boolean {
    return this.stopped.has(taskId)
  }

  /** Plays one signed action; see {@link CloudActions}. */
  handle(operation: SimulatedOperation, params: Record<string, string>): { ret: number; msg?: string } {
    const round = this.round
    const serviceCode = params.service_code ?? ''
    if (operation === 'send_txt_msg') {
      if (!params.dst_username || params.message === undefined)
        return { ret: SIMULATOR_RETS.MISSING_PARAMETER, msg: 'dst_username and message are required' }
      const known = round?.scenario.sessions.some(
        (session) => session.serviceCode === serviceCode && session.author === params.dst_username,
      )
      return known ? { ret: 0 } : { ret: SIMULATOR_RETS.UNKNOWN_USER, msg: 'no such user' }
    }
    const taskId = params.task_id
    if (!taskId) return { ret: SIMULATOR_RETS.MISSING_PARAMETER, msg: 'task_id is required' }
    const elapsed = round ? this.now() - round.startedAtMs : -1
    const session = round?.scenario.sessions.find((s) => s.taskId === taskId && s.serviceCode === serviceCode)
    if (
      !round ||
      !session ||
      this.stopped.has(taskId) ||
      elapsed < session.listedFromMs ||
      elapsed >= session.listedUntilMs
    ) {
      return { ret: SIMULATOR_RETS.UNKNOWN_TASK, msg: 'no such task running' }
    }
    this.stopped.set(taskId, elapsed)
    if (this.deliver) {
      const ends = round.scenario.callbacks.filter((callback) => callback.taskId === taskId && callback.type === 1)
      const send = this.deliver
      void (async () => {
        for (const end of ends) await send({ ...end, atMs: elapsed, fields: { ...end.fields, reach_end: '0' } })
      })().catch(() => {})
    }
    return { ret: 0 }
  }
}
