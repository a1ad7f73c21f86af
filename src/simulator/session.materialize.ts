import { countersAt, datePath, type ScenarioOutput, type ScenarioSession } from './scenario.model.js'

/**
 * A session's plan, in abstract time units, and how it becomes real: its session with times and
 * outputs, and each step's callback fields.
 */

// What happens to a session, in abstract time units; spread over real time once all are known.
export type Step =
  | { u: number; kind: 'start' | 'end'; output: number; reachEnd?: boolean }
  | { u: number; kind: 'thumbnail'; n: number }
  | { u: number; kind: 'waiting' | 'resumed' | 'archive' }
  | { u: number; kind: 'disconnect'; reason: number }

export interface Plan {
  session: Omit<
    ScenarioSession,
    'createdAt' | 'outputs' | 'liveFromMs' | 'listedFromMs' | 'listedUntilMs' | 'userOnlineFromMs' | 'userOnlineUntilMs'
  >
  outputs: Pick<ScenarioOutput, 'container' | 'tag' | 'videoBitRate' | 'copy'>[]
  size: readonly [number, number]
  isResume: boolean
  steps: Step[]
  at: { liveFrom: number; end: number; listedFrom: number; listedUntil: number; userFrom: number; userUntil: number }
}

export function materialize(plan: Plan, epochMs: number, toMs: (u: number) => number): ScenarioSession {
  const { session, size } = plan
  const liveFromMs = toMs(plan.at.liveFrom)
  const createdAt = Math.floor((epochMs + liveFromMs) / 1000)
  const day = datePath(createdAt)
  const host = `${session.vsId}.live.example`
  const { taskId } = session
  const outputs = plan.outputs.map((output, index): ScenarioOutput => {
    const { container } = output
    return {
      ...output,
      index,
      format: `${container}/libx264/aac`,
      videoCodec: 'libx264',
      audioCodec: 'aac',
      width: size[0],
      height: size[1],
      fileName: container === 'rtmp' ? taskId : `${taskId}.${container}`,
      relativeDir: `${session.serviceCode}/${day}/${container}/`,
      liveUrl:
        container === 'flv'
          ? `${session.httpLiveUrl}${taskId}.flv`
          : container === 'rtmp'
            ? `rtmp://${host}/live/${taskId}`
            : `http://${host}:80/hls/${taskId}/index.m3u8`,
      svodUrl: container === 'flv' ? `http://${host}/${session.serviceCode}/${day}/flv/${taskId}.flv?live=1` : null,
      audioBitRate: 64_000,
    }
  })
  return {
    ...session,
    createdAt,
    outputs,
    liveFromMs,
    listedFromMs: toMs(plan.at.listedFrom),
    listedUntilMs: toMs(plan.at.listedUntil),
    userOnlineFromMs: toMs(plan.at.userFrom),
    userOnlineUntilMs: toMs(plan.at.userUntil),
  }
}

export function callbackFields(
  session: ScenarioSession,
  plan: Plan,
  step: Step,
  atMs: number,
  countedAtMs: number,
): Record<string, string> {
  const common = { service_code: session.serviceCode, vs_id: session.vsId }
  const live = { opaque: session.opaque, live_only: session.liveOnly ? '1' : '0' }
  const client = { ctype: String(session.ctype), cversion: session.cversion }
  const size = `${plan.size[0]}x${plan.size[1]}`
  const output = 'output' in step ? session.outputs[step.output] : session.outputs[0]
  const counters = countersAt(session, output, countedAtMs)
  const ended = {
    created_at: String(session.createdAt),
    is_resume: plan.isResume ? '1' : '0',
    duration: counters.seconds.toFixed(2),
    http_output_bytes: String(counters.httpOutputBytes),
    input_bytes: String(counters.inputBytes),
  }
  const base = (type: number) => ({ type: String(type), hashed_id: session.taskId })
  switch (step.kind) {
    case 'start':
      return {
        ...base(0),
        author: session.author,
        url: output?.liveUrl ?? '',
        ...(output?.svodUrl ? { svod_url: output.svodUrl } : {}),
        size,
        created_at: String(session.createdAt),
        duration: '0.00',
        format: output?.format ?? '',
        path: output?.relativeDir ?? '',
        ...client,
        is_resume: '0',
        tag: output?.tag ?? '',
        ...live,
        private_flag: '0',
        ...common,
      }
    case 'end':
      return {
        ...base(1),
        ...ended,
        reach_end: step.reachEnd ? '1' : '0',
        tag: output?.tag ?? '',
        format: output?.format ?? '',
        output_idx: String(step.output),
        ...live,
        ...common,
      }
    case 'archive': {
      const dir = `${session.serviceCode}/${datePath(session.createdAt)}/mp4/`
      return {
        ...base(2),
        author: session.author,
        size,
        ...ended,
        format: 'mp4/libx264/aac',
        path: dir,
        file_name: `${session.taskId}.mp4`,
        ...client,
        tag: output?.tag ?? '',
        output_idx: '0',
        ...live,
        url: `http://vod.example/${dir}${session.taskId}.mp4`,
        private_flag: '0',
        ...common,
      }
    }
    case 'thumbnail': {
      const dir = `${session.serviceCode}/${datePath(session.createdAt)}/jpg/`
      const name = `${session.taskId}-${step.n}.jpg`
      const [width, height] = [Math.round(plan.size[0] / 2), Math.round(plan.size[1] / 2)]
      return {
        ...base(9),
        path: dir,
        file_name: name,
        width: String(width),
        height: String(height),
        ...live,
        url: `http://img.example/${dir}${name}`,
        ...common,
      }
    }
    case 'waiting':
    case 'resumed':
      return {
        type: '15',
        username: session.author,
        service_code: session.serviceCode,
        hashed_id: session.taskId,
        status: step.kind === 'waiting' ? '0' : '1',
      }
    case 'disconnect':
      return {
        type: '8',
        username: session.author,
        session_duration: String(Math.round((atMs - session.userOnlineFromMs) / 1000)),
        disconnect_reason: String(step.reason),
        ...common,
      }
  }
}
