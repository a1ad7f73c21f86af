import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { verifySignature } from '../model/signature.verify.js'
import { API_VERSION_PATH, TASK_LIST_PATH } from '../model/task-list.schema.js'
import type { SimulatedTaskList } from './task-list.snapshot.js'
import { answerManagement, type ListedFile } from './list-files.answer.js'
import { type ActionHandler, type ReceivedAction, SIMULATOR_RETS, type SimulatedOperation } from './cloud.answers.js'

/** A service code the simulator plays, with the secret it shares with the gateway. */
export interface SimulatedService {
  serviceCode: string
  secret: string
}

/** What task_list lists for a service code right now. */
export type TaskListSource = (serviceCode: string) => SimulatedTaskList

/** Where and how {@link startTaskListServer} serves. */
export interface TaskListServerOptions {
  services: readonly SimulatedService[]
  source: TaskListSource
  /** 0 (the default) takes a free port. */
  port?: number
  host?: string
  /** A path before `/api/20140928/task_list`, as a service behind a proxy would have. */
  pathPrefix?: string
  toleranceMs?: number
  /** The signature header spellings accepted, tried in order. */
  headerPrefixes?: readonly string[]
  now?: () => number
  /** Plays `cancel_task` and `send_txt_msg`; without it every signed action answers ret 0. */
  onAction?: ActionHandler
  /** The archive `list_files` lists for a service code now; none unless given. */
  files?: (serviceCode: string) => readonly ListedFile[]
  /** How a code's task_list misbehaves now by the scenario's plan (a stale list), while `behave` sets none. */
  planned?: (serviceCode: string) => TaskListFault | undefined
}

/** A test hook: how the next answers misbehave. */
export interface TaskListFault {
  /** Wait this long before answering (to force a client timeout). */
  delayMs?: number
  /** Answer HTTP 200 with this non-zero `ret`. */
  ret?: number
  /** Answer with this HTTP status (e.g. 500). */
  status?: number
}

/** A running simulated task_list. */
export interface TaskListServer {
  /** The base URL to give the gateway as the service's `baseUrl`. */
  url: string
  /** How many task_list requests arrived, whatever their answer. */
  readonly requests: number
  /**
   * The signed actions received (`cancel_task`, `send_txt_msg`), oldest first; also at `GET {url}/simulator/actions`.
   */
  readonly actions: readonly ReceivedAction[]
  /** How many management (`list_files`) requests arrived, whatever their answer. */
  readonly managementRequests: number
  /** Sets how every following task_list request misbehaves; `behave({})` restores normal answers. */
  behave(fault: TaskListFault): void
  /** The same for management (`list_files`) requests alone. */
  behaveFiles(fault: TaskListFault): void
  close(): Promise<void>
}

const EMPTY_BODY = new Uint8Array(0)

/** Serves `GET {url}/api/20140928/task_list?service_code=…`, signed as the service requires. */
export async function startTaskListServer(options: TaskListServerOptions): Promise<TaskListServer> {
  const services = new Map(options.services.map((service) => [service.serviceCode, service]))
  const prefix = (options.pathPrefix ?? '').replace(/\/+$/, '')
  const taskListPath = `${prefix}${TASK_LIST_PATH}`
  const toleranceMs = options.toleranceMs ?? 300_000
  const headerPrefixes = options.headerPrefixes ?? ['svc', 'xvs']
  const now = options.now ?? Date.now
  const waits = new Set<() => void>()
  let fault: TaskListFault = {}
  let filesFault: TaskListFault = {}
  let requests = 0
  let managementRequests = 0
  const managementPath = `${prefix}${API_VERSION_PATH}/management`
  const received: ReceivedAction[] = []
  // task_list requests answered by service code, shown beside the actions (how many polls a stop took).
  const polls: Record<string, number> = {}
  const operations = new Map<string, SimulatedOperation>(
    (['cancel_task', 'send_txt_msg'] as const).map((operation) => [
      `${prefix}${API_VERSION_PATH}/${operation}`,
      operation,
    ]),
  )

  const verified = (
    request: IncomingMessage,
    path: string,
    rawQuery: string,
    body: Uint8Array = EMPTY_BODY,
  ): { ok: true; serviceCode: string } | { ok: false; ret: number } => {
    const serviceCode = new URLSearchParams(rawQuery).get('service_code')
    if (!serviceCode) return { ok: false, ret: SIMULATOR_RETS.MISSING_SERVICE_CODE }
    const service = services.get(serviceCode)
    if (!service) return { ok: false, ret: SIMULATOR_RETS.UNKNOWN_SERVICE }
    const spelling =
      headerPrefixes.find((name) => request.headers[`${name}-signature`] !== undefined) ?? headerPrefixes[0] ?? 'svc'
    const verdict = verifySignature({
      path,
      rawQuery,
      body,
      signatureHeader: header(request, `${spelling}-signature`),
      timestampHeader: header(request, `${spelling}-timestamp`),
      secrets: [service.secret],
      nowMs: now(),
      toleranceMs,
    })
    if (!verdict.ok)
      return {
        ok: false,
        ret: verdict.error.code === 'TIMESTAMP_STALE' ? SIMULATOR_RETS.STALE_TIMESTAMP : SIMULATOR_RETS.BAD_SIGNATURE,
      }
    return { ok: true, serviceCode }
  }

  // A signed cancel_task or send_txt_msg: played by onAction, and kept.
  const act = (
    request: IncomingMessage,
    response: ServerResponse,
    operation: SimulatedOperation,
    path: string,
    rawQuery: string,
  ) => {
    if (request.method !== 'GET') return send(response, 405, { message: `${operation} is a GET` })
    const check = verified(request, path, rawQuery)
    if (!check.ok) return refuse(response, check.ret)
    const params = Object.fromEntries(new URLSearchParams(rawQuery))
    const answer = options.onAction ? options.onAction(operation, params) : { ret: 0 }
    received.push({ operation, path, query: rawQuery, params, ret: answer.ret, at: new Date(now()).toISOString() })
    return send(response, 200, answer.ret === 0 ? { ret: 0 } : { ret: answer.ret, msg: answer.msg ?? 'failed' })
  }
  let closed = false

  // A signed POST with a JSON body, verified over path + query + the raw body + timestamp.
  const manage = async (request: IncomingMessage, response: ServerResponse, path: string, rawQuery: string) => {
    if (request.method !== 'POST') return send(response, 405, { message: 'management is a POST' })
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    managementRequests++
    const misbehave = filesFault
    if (misbehave.delayMs) await pause(misbehave.delayMs)
    if (closed || response.destroyed) return
    if (misbehave.status !== undefined) return send(response, misbehave.status, { message: 'simulated failure' })
    if (misbehave.ret !== undefined) return send(response, 200, { ret: misbehave.ret, msg: 'simulated refusal' })
    const body = Buffer.concat(chunks)
    const check = verified(request, path, rawQuery, body)
    if (!check.ok) return send(response, 200, { ret: check.ret, msg: 'refused' })
    const files = options.files ? options.files(check.serviceCode) : []
    return send(response, 200, answerManagement(body.toString('utf8'), files, SIMULATOR_RETS))
  }

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer)
        waits.delete(done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      waits.add(done)
    })

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const target = request.url ?? '/'
    const mark = target.indexOf('?')
    const path = mark < 0 ? target : target.slice(0, mark)
    const rawQuery = mark < 0 ? '' : target.slice(mark + 1)
    const operation = operations.get(path)
    if (operation) return act(request, response, operation, path, rawQuery)
    if (path === managementPath) return manage(request, response, path, rawQuery)
    if (path === `${prefix}/simulator/actions` && request.method === 'GET')
      return send(response, 200, { actions: received, taskListAnswers: polls })
    if (path !== taskListPath) return send(response, 404, { message: 'not found' })
    if (request.method !== 'GET') return send(response, 405, { message: 'task_list is a GET' })
    requests++
    const code = new URLSearchParams(rawQuery).get('service_code')
    const planned = code && options.planned && Object.keys(fault).length === 0 ? options.planned(code) : undefined
    const misbehave = planned ?? fault
    if (misbehave.delayMs) await pause(misbehave.delayMs)
    // The client may have given up during the delay, or the server closed.
    if (closed || response.destroyed) return
    if (misbehave.status !== undefined) return send(response, misbehave.status, { message: 'simulated failure' })
    if (misbehave.ret !== undefined) return refuse(response, misbehave.ret)

    const check = verified(request, path, rawQuery)
    if (!check.ok) return refuse(response, check.ret)
    polls[check.serviceCode] = (polls[check.serviceCode] ?? 0) + 1
    return send(response, 200, { ret: 0, ...options.source(check.serviceCode) })
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent)
        send(response, 500, { message: error instanceof Error ? error.message : 'simulator failure' })
      else response.destroy()
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen({ port: options.port ?? 0, host: options.host ?? '127.0.0.1' }, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const address = server.address() as AddressInfo
  // Bound to every interface, the server is still reached on the loopback by the gateway beside it.
  const shown = address.address === '0.0.0.0' || address.address === '::' ? '127.0.0.1' : address.address
  const host = shown.includes(':') ? `[${shown}]` : shown

  return {
    url: `http://${host}:${address.port}${prefix}`,
    get requests() {
      return requests
    },
    get actions() {
      return received
    },
    get managementRequests() {
      return managementRequests
    },
    behave(next) {
      fault = { ...next }
    },
    behaveFiles(next) {
      filesFault = { ...next }
    },
    async close() {
      closed = true
      for (const wake of [...waits]) wake()
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()))
      server.closeAllConnections()
      await stopped
    },
  }
}

// An error answer of the service: HTTP 200, a non-zero ret, and nothing listed.
function refuse(response: ServerResponse, ret: number): void {
  send(response, 200, { ret, user_list: [], task_list: [] })
}

function send(response: ServerResponse, status: number, body: object): void {
  const text = JSON.stringify(body)
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  })
  response.end(text)
}

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name]
  return Array.isArray(value) ? value[0] : value
}
