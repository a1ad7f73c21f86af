import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { isDeepStrictEqual } from 'node:util'
import { freePort } from '../support/free.port.js'
import { ratio, type TargetCheck } from './bench.report.js'
import type { LoadRequest } from './load.generate.js'
import { treeCpuMs } from './process.cpu.js'
import type { Work, WorkFigure } from './query.windows.js'

/**
 * The query bench's second baseline: PostGraphile 5 (amber preset, connection-filter plugin) over
 * livegate's own tables, in a process of its own (test/bench/peer/peer.process.ts), answering the task
 * page and the small query written in its schema. Before any window, each of its answers is
 * checked against livegate's for the same information: both normalized to one plain structure
 * (times as epoch ms, ids as the task's service code and hashed_id, cursors left out) and deep-equal.
 */

const ENTRY = fileURLToPath(new URL('./peer/peer.process.ts', import.meta.url))

/**
 * PostGraphile and its family are the bench's alone, and want Node 22: they live in a package of
 * their own (test/bench/peer/package.json, with its lockfile), which the bench installs into the
 * ignored test/bench/peer/node_modules the first time it needs it, so livegate's own install
 * never fetches them nor warns about their engines.
 */
function installPeer(): void {
  const folder = fileURLToPath(new URL('./peer/', import.meta.url))
  if (existsSync(`${folder}node_modules/postgraphile/package.json`)) return
  console.error(`bench: installing PostGraphile into ${folder}node_modules (once)`)
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
  execFileSync(npm, ['ci', '--prefix', folder, '--no-audit', '--no-fund', '--loglevel=error'], { stdio: 'inherit' })
}
export const PEER = 'PostGraphile 5, one process'

/** What the query section says of this baseline. */
export const PEER_DESCRIPTION =
  `The second baseline is ${PEER} (test/bench/peer.postgraphile.ts), on the bench's Node: the amber preset and ` +
  `the connection-filter plugin over livegate's tables, ` +
  'smart tags declaring the callbacks→tasks and recordings→tasks keys; its task page reads the columns and the ' +
  'jsonb `tasks.node` livegate derives (whole: it cannot pick inside it), the catalogue of recordings ' +
  '(`Task.recordings`, oldest first by id, as livegate documents it) and each ' +
  "task's latest 5 callbacks with their parsed `values` jsonb; before any window its answers are checked for the " +
  "same information as livegate's (both made plain: " +
  'times as ms, ids as service code and hashed_id, cursors left out), and its Node CPU is every thread of its ' +
  "process, as `serve`'s is."

/**
 * The task page in PostGraphile's schema: the same tasks in the same order and the same filter.
 * Columns where livegate has one (status, author, listed…); the rest is the task's derived node,
 * the jsonb `tasks.node` livegate writes beside the state, read whole (PostGraphile cannot pick
 * inside a jsonb column, so it sends more bytes than the page shows); the task's recordings from the
 * catalogue, oldest first (by id), as `Task.recordings` documents them; the latest 5 callbacks, their
 * parsed `values` jsonb whole; both through the foreign keys the smart tags declare.
 */
export const PEER_TASK_PAGE_QUERY = `query TaskPage($first: Int, $after: Cursor, $filter: TaskFilter) {
  allTasks(first: $first, after: $after, filter: $filter, orderBy: [SORT_AT_DESC, ROW_ID_DESC]) {
    totalCount
    pageInfo { hasNextPage endCursor }
    edges {
      cursor
      node {
        serviceCode taskId status endReason author listed node
        recordings(orderBy: ROW_ID_ASC) {
          nodes {
            outputIndex tag url fileName duration width height inputBytes recordedAt liveStartedAt receivedAt format
          }
        }
        callbacks(first: 5, orderBy: ROW_ID_DESC) {
          edges { cursor node { rowId type taskId userName serviceCreatedAt receivedAt deliveries signature values } }
        }
      }
    }
  }
}`

/**
 * The small query: the newest 20 tasks, their identity (livegate's `id` is its service code and hashed_id), status and
 * user.
 */
export const PEER_SMALL_QUERY =
  'query TaskList($first: Int) { allTasks(first: $first, orderBy: [SORT_AT_DESC, ROW_ID_DESC]) { edges { node { ' +
  'serviceCode taskId status author } } } }'

function request(operationName: string, query: string, variables: Record<string, unknown>): LoadRequest {
  const body = Buffer.from(JSON.stringify({ operationName, query, variables }))
  return {
    path: '/graphql',
    headers: { 'content-type': 'application/json', 'content-length': String(body.length) },
    body,
  }
}

async function post(url: string, item: LoadRequest): Promise<any> {
  const response = await fetch(new URL(item.path, url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: item.body,
  })
  const json = (await response.json()) as any
  if (response.status !== 200 || json.errors)
    throw new Error(`${url} answered ${response.status}: ${JSON.stringify(json).slice(0, 400)}`)
  return json
}

/** Times as epoch ms: livegate writes ISO text at UTC, PostGraphile its own ISO text, the stored node numbers. */
const ms = (time: unknown): number | null =>
  time === null || time === undefined ? null : typeof time === 'number' ? time : Date.parse(String(time))
const CONTAINERS = new Set(['FLV', 'RTMP', 'M3U8', 'MP4'])
const container = (name: unknown) => (CONTAINERS.has(String(name).toUpperCase()) ? String(name).toUpperCase() : 'OTHER')
const format = (f: any, full = true) =>
  f
    ? full
      ? { container: container(f.container), videoCodec: f.videoCodec ?? null, audioCodec: f.audioCodec ?? null }
      : { container: container(f.container) }
    : null
const int32 = (n: unknown) => (typeof n === 'number' && Number.isInteger(n) && Math.abs(n) <= 2 ** 31 ? n : null)
const fromBase64url = (text: string) => Buffer.from(text, 'base64url').toString('utf8')
const KINDS: Record<number, string> = {
  0: 'LIVE_START',
  1: 'LIVE_END',
  2: 'ARCHIVED',
  8: 'CLIENT_DISCONNECT',
  9: 'THUMBNAIL',
  15: 'LIVE_RESUME',
}

/** livegate's answer, plain: its ids decoded, cursors and typenames left out, times as ms. */
function plainOurs(value: any, key = ''): any {
  if (Array.isArray(value)) return value.map((item) => plainOurs(item))
  if (value === null || typeof value !== 'object') return /At$/.test(key) ? ms(value) : value
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value)) {
    if (k === 'cursor' || k === '__typename' || k === 'pageInfo') continue
    if (k === 'id' && typeof v === 'string') {
      const id = fromBase64url(v)
      if (id.startsWith('Notification:')) out.row = JSON.parse(id.slice('Notification:'.length))[0]
      continue
    }
    out[k] = plainOurs(v, k)
  }
  return out
}

/** One callback row as the notification livegate shows, read off its `values` as livegate's schema names them. */
function plainCallback(c: any): Record<string, unknown> {
  const v = c.values ?? {}
  const common = {
    row: c.rowId,
    kind: KINDS[c.type] ?? 'UNKNOWN',
    type: c.type,
    taskId: c.taskId,
    userName: c.userName,
    receivedAt: ms(c.receivedAt),
    deliveries: c.deliveries,
    signatureVerified: c.signature === 'verified',
  }
  const more: Record<number, Record<string, unknown>> = {
    0: { playUrl: v.url ?? null, tag: v.tag ?? null, createdAt: ms(c.serviceCreatedAt), format: format(v.format) },
    1: { reachEnd: v.reachEnd ?? null, outputIndex: int32(v.outputIdx), inputBytes: v.inputBytes ?? null },
    2: { playUrl: v.url ?? null, fileName: v.fileName ?? null, duration: v.duration ?? null },
    9: { imageUrl: v.url ?? null, width: int32(v.width), height: int32(v.height) },
    15: { status: v.status === 0 ? 'WAITING' : v.status === 1 ? 'RESUMED' : null },
  }
  return { ...common, ...(more[c.type] ?? {}) }
}

/** A PostGraphile task, plain: columns as they are, the node's parts with livegate's field names. */
function plainPeerTask(t: any): Record<string, unknown> {
  const n = t.node ?? {}
  const recording = (r: any) => ({
    outputIndex: r.outputIndex,
    playUrl: r.url,
    fileName: r.fileName,
    duration: r.duration,
    receivedAt: ms(r.receivedAt),
  })
  return {
    taskId: t.taskId,
    serviceCode: t.serviceCode,
    vsId: n.vsId,
    userName: t.author,
    status: t.status,
    endReason: t.endReason,
    isResume: n.isResume,
    liveOnly: n.liveOnly,
    opaque: n.opaque,
    startedAt: ms(n.startedAt),
    endedAt: ms(n.endedAt),
    listed: t.listed,
    httpLiveUrl: n.httpLiveUrl,
    inputBytes: n.inputBytes,
    outputs: (n.outputs ?? []).map((o: any) => ({
      index: o.index,
      tag: o.tag,
      playUrl: o.playUrl,
      timeShiftUrl: o.timeShiftUrl,
      fileName: o.fileName,
      width: o.width,
      height: o.height,
      httpOutputBytes: o.httpOutputBytes,
      connections: o.connections,
      startedAt: ms(o.startedAt),
      endedAt: ms(o.endedAt),
      format: format(o.format),
      streams: (o.streams ?? []).map((s: any) => ({
        index: s.index,
        kind: s.kind ?? 'UNKNOWN',
        codecId: s.codecId,
        width: s.kind === 'AUDIO' ? null : s.width,
        height: s.kind === 'AUDIO' ? null : s.height,
        copyMode: s.copyMode,
        bitRate: s.bitRate,
      })),
      recordings: (o.recordings ?? []).map(recording),
    })),
    // The catalogue's rows (PostGraphile's BigInt is text; the created time is the recording's, else the live's).
    recordings: t.recordings.nodes.map((r: any) => ({
      ...recording(r),
      tag: r.tag,
      width: r.width,
      height: r.height,
      inputBytes: r.inputBytes === null ? null : Number(r.inputBytes),
      createdAt: ms(r.recordedAt ?? r.liveStartedAt),
      format: format(r.format, false),
    })),
    thumbnails: (n.thumbnails ?? []).map((h: any) => ({
      imageUrl: h.url,
      width: h.width,
      height: h.height,
      receivedAt: ms(h.receivedAt),
    })),
    notifications: { edges: t.callbacks.edges.map((e: any) => ({ node: plainCallback(e.node) })) },
  }
}

/** A task page of either server as `{ totalCount, hasNextPage, tasks }`; a small query's as `{ tasks }`. */
function plainPage(json: any, peer: boolean): unknown {
  const connection = peer ? json.data.allTasks : json.data.tasks
  const tasks = connection.edges.map((edge: any) => {
    if (peer)
      return edge.node.node === undefined
        ? {
            serviceCode: edge.node.serviceCode,
            taskId: edge.node.taskId,
            status: edge.node.status,
            userName: edge.node.author,
          }
        : plainPeerTask(edge.node)
    if (edge.node.outputs) return plainOurs(edge.node)
    const [serviceCode, taskId] = JSON.parse(fromBase64url(edge.node.id).slice('Task:'.length)) as [string, string]
    return { serviceCode, taskId, status: edge.node.status, userName: edge.node.userName }
  })
  return connection.totalCount === undefined
    ? { tasks }
    : { totalCount: connection.totalCount, hasNextPage: connection.pageInfo.hasNextPage, tasks }
}

/** Where two plain values first differ. */
function firstDifference(a: any, b: any, path = ''): string {
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)]))
      if (!isDeepStrictEqual(a[key], b[key])) return firstDifference(a[key], b[key], `${path}.${key}`)
  }
  return `${path || '(top)'}: livegate ${JSON.stringify(a)?.slice(0, 300)} ≠ PostGraphile ${JSON.stringify(b)?.slice(0, 300)}`
}

/** PostGraphile 5 in a process of its own on one database, its pools, and its figures beside livegate's. */
export class PostGraphilePeer {
  pagePool: LoadRequest[] = []
  smallPool: LoadRequest[] = []

  private constructor(
    readonly url: string,
    readonly pid: number,
    private readonly child: ChildProcess,
  ) {}

  /** Starts `peer.process.ts` on this Node (the bench's own) and waits until it listens. */
  static async start(databaseUrl: string): Promise<PostGraphilePeer> {
    installPeer()
    const port = await freePort()
    const child = spawn(process.execPath, ['--import', 'tsx', ENTRY, databaseUrl, String(port)], {
      env: { ...process.env, NODE_ENV: 'production', GRAPHILE_ENV: 'production' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stderr = ''
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString('utf8')).slice(-4000)
    })
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`PostGraphile did not start within 120 s: ${stderr}`)), 120_000)
      child.stdout?.on('data', (chunk: Buffer) => {
        if (chunk.toString('utf8').includes('ready')) {
          clearTimeout(timer)
          resolve()
        }
      })
      child.once('exit', (code) => reject(new Error(`PostGraphile exited with ${code}: ${stderr}`)))
    })
    return new PostGraphilePeer(`http://127.0.0.1:${port}`, child.pid as number, child)
  }

  /**
   * Builds its pools (pages 1–3 by its own cursors and the status filter; the small query) beside
   * livegate's, and checks every answer against livegate's for the same information, twice over.
   */
  async prepare(livegateUrl: string, livegatePages: LoadRequest[], livegateSmall: LoadRequest[]): Promise<void> {
    const page = (variables: Record<string, unknown>) => request('TaskPage', PEER_TASK_PAGE_QUERY, variables)
    this.pagePool = [page({ first: 50 })]
    for (let i = 0; i < 2; i++)
      this.pagePool.push(
        page({
          first: 50,
          after: (await post(this.url, this.pagePool.at(-1) as LoadRequest)).data.allTasks.pageInfo.endCursor,
        }),
      )
    this.pagePool.push(page({ first: 50, filter: { status: { in: ['LIVE', 'WAITING_RECONNECT'] } } }))
    this.smallPool = [request('TaskList', PEER_SMALL_QUERY, { first: 20 })]
    const pairs = [
      ...livegatePages.map((ours, i) => [ours, this.pagePool[i]]),
      [livegateSmall[0], this.smallPool[0]],
    ] as Array<[LoadRequest, LoadRequest]>
    for (const [ours, theirs] of [...pairs, ...pairs]) {
      const [a, b] = [plainPage(await post(livegateUrl, ours), false), plainPage(await post(this.url, theirs), true)]
      if (!isDeepStrictEqual(a, b))
        throw new Error(`livegate and PostGraphile give different information, first at ${firstDifference(a, b)}`)
    }
  }

  /** Its two works, named `task page: …` and `small query: …` as the bench's other lines. */
  works(size: string): { page: Work; small: Work } {
    const cpuMs = () => treeCpuMs(this.pid)
    return {
      page: { name: `task page: ${PEER}, ${size}`, url: this.url, pool: this.pagePool, cpuMs },
      small: { name: `small query: ${PEER}, ${size}`, url: this.url, pool: this.smallPool, cpuMs },
    }
  }

  /** The targets against the peer, livegate as `serve --workers 1` (one process too), all of the same run. */
  static targets(figures: readonly WorkFigure[], livegate: { page: string; small: string }): TargetCheck[] {
    const find = (start: string, part: string) =>
      figures.find((f) => f.name.startsWith(start) && f.name.includes(part)) as WorkFigure
    const [pageCeiling, smallCeiling] = [find('task page', 'SQL ceiling'), find('small query', 'SQL ceiling')]
    const [ours, theirs] = [find('task page', livegate.page), find('task page', PEER)]
    const [oursSmall, theirsSmall] = [find('small query', livegate.small), find('small query', PEER)]
    const [a, b] = [ours.result.rps / pageCeiling.result.rps, theirs.result.rps / pageCeiling.result.rps]
    // The issue sets 1.1× for Node 24 (the peer measured 1.06× there); on Node 20 the bar is the peer.
    const major = Number(process.versions.node.split('.')[0])
    const [c, d] = [oursSmall.result.rps / smallCeiling.result.rps, theirsSmall.result.rps / smallCeiling.result.rps]
    return [
      {
        name: 'task page vs ceiling, livegate one process (serve, 1 worker) vs PostGraphile 5 one process',
        target: '≥ 1.10× on Node 24; ahead of PostGraphile on every Node',
        measured:
          `${ratio(ours.result.rps, pageCeiling.result.rps)} (PostGraphile ${ratio(theirs.result.rps, pageCeiling.result.rps)}` +
          `)`,
        met: a > b && (major < 24 || a >= 1.1),
      },
      {
        name: 'task page Node CPU per page, every thread, livegate serve 1 worker vs PostGraphile 5 (same run)',
        target: "≤ PostGraphile's",
        measured: `${ours.nodeCpuMs.toFixed(2)} ms (PostGraphile ${theirs.nodeCpuMs.toFixed(2)} ms)`,
        met: ours.nodeCpuMs <= theirs.nodeCpuMs,
      },
      {
        name: 'small query vs ceiling, livegate serve 1 worker vs PostGraphile 5 (same run)',
        target: "≥ 1.10× PostGraphile's ratio",
        measured:
          `${ratio(oursSmall.result.rps, smallCeiling.result.rps)} (PostGraphile ${ratio(theirsSmall.result.rps, smallCeiling.result.rps)}` +
          `; ${ratio(c, d)} of it)`,
        met: c >= 1.1 * d,
      },
      {
        name: 'small query PostgreSQL CPU per request, livegate serve 1 worker vs PostGraphile 5 (same run)',
        target: "≤ PostGraphile's",
        measured:
          `${(oursSmall.postgresCpuMs * 1000).toFixed(0)} µs (PostGraphile ` +
          `${(theirsSmall.postgresCpuMs * 1000).toFixed(0)} µs)`,
        met: oursSmall.postgresCpuMs <= theirsSmall.postgresCpuMs,
      },
    ]
  }

  /** SIGTERM, then waits for the exit (SIGKILL after 10 s). */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()))
    this.child.kill('SIGTERM')
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000)
    await exited
    clearTimeout(timer)
  }
}
