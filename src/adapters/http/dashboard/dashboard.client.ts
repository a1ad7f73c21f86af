// The dashboard page's own script, compiled from TypeScript into an ES module the page loads
// (src/adapters/http/pages.tsconfig.json). uPlot and graphql-ws are the prebuilt browser builds the
// page loads before it, both served by livegate (dashboard.globals.d.ts). The operations it sends
// are schema/operations.graphql's `Dashboard…`, validated against the schema by the docs test and
// typed by codegen (schema/client/operations.ts); the page carries their text (dashboard.plugin.ts).
import type {
  DashboardChangesSubscription,
  DashboardReplayMutation,
  DashboardReplayMutationVariables,
  DashboardRowFragment,
  DashboardSamplesSubscription,
  DashboardServiceQuery,
  DashboardServiceQueryVariables,
  DashboardSummaryQuery,
  DashboardSummaryQueryVariables,
  DashboardTaskFieldsFragment,
  DashboardWebhooksQuery,
  DashboardWebhooksQueryVariables,
} from '../../../../schema/client/operations.js'

const KEY_STORAGE = 'livegate.dashboard.apiKey'
const HOUR_MS = 3600_000
// The sparkline's window: long enough to show a trend, short enough to stay a handful of points.
const SPARK_MS = 10 * 60_000
const LIVE_ROWS = 100
const ENDED_ROWS = 20
// Counts and freshness are read again at most this often while events arrive.
const SUMMARY_EVERY_MS = 3000

// Relative to the page, so a reverse proxy's path prefix is kept.
const endpoint = new URL('graphql', window.location.href)
const socketUrl = new URL(endpoint)
socketUrl.protocol = endpoint.protocol === 'https:' ? 'wss:' : 'ws:'

/** What each operation this script sends answers, and the variables it takes. */
interface Operations {
  DashboardSummary: { data: DashboardSummaryQuery; variables: DashboardSummaryQueryVariables }
  DashboardService: { data: DashboardServiceQuery; variables: DashboardServiceQueryVariables }
  DashboardWebhooks: { data: DashboardWebhooksQuery; variables: DashboardWebhooksQueryVariables }
  DashboardReplay: { data: DashboardReplayMutation; variables: DashboardReplayMutationVariables }
  DashboardSamples: { data: DashboardSamplesSubscription; variables: Record<string, never> }
  DashboardChanges: { data: DashboardChangesSubscription; variables: Record<string, never> }
}
type Task = DashboardTaskFieldsFragment

// The operations' text, as schema/operations.graphql has them: the page carries them in a JSON
// data block (never run, so the page's policy needs no inline script).
const operationTexts = JSON.parse(document.getElementById('dashboard-operations')?.textContent ?? '{}') as Record<string, string>
const operationText = (name: keyof Operations | 'DashboardTask') => operationTexts[name] ?? ''

/** An element the page's HTML has: the page and this script go together. */
function $<T extends HTMLElement = HTMLElement>(id: string): T {
  const element = document.getElementById(id)
  if (!element) throw new Error(`the page has no #${id}`)
  return element as T
}
/** An element inside `root` that its template has. */
function within<T extends Element = HTMLElement>(root: ParentNode, selector: string): T {
  const element = root.querySelector(selector)
  if (!element) throw new Error(`no ${selector} in the page's template`)
  return element as T
}
const servicesEl = $('services')
const noticeEl = $('notice')
const connectionEl = $('connection')
const keyInput = $<HTMLInputElement>('api-key')
const forgetButton = $<HTMLButtonElement>('forget-key')

type Maybe<T> = T | null | undefined
const numbers = new Intl.NumberFormat('en')
const count = (n: Maybe<number>) => (n === null || n === undefined ? '–' : numbers.format(n))
const bitrate = (bps: Maybe<number>) => {
  if (bps === null || bps === undefined) return '–'
  const units: Array<[string, number]> = [
    ['Gb/s', 1e9],
    ['Mb/s', 1e6],
    ['kb/s', 1e3],
  ]
  for (const [unit, size] of units) if (bps >= size) return `${(bps / size).toFixed(bps >= size * 10 ? 0 : 1)} ${unit}`
  return `${Math.round(bps)} b/s`
}
const ago = (iso: Maybe<string>) => {
  if (!iso) return 'never'
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000))
  return seconds < 90 ? `${seconds} s ago` : seconds < 5400 ? `${Math.round(seconds / 60)} min ago` : `${Math.round(seconds / 3600)} h ago`
}
const ms = (value: Maybe<number>) => {
  if (value === null || value === undefined) return '–'
  return value >= 1000 ? `${(value / 1000).toFixed(value >= 10_000 ? 0 : 1)} s` : `${Math.round(value)} ms`
}
const duration = (fromIso: string, toIso?: Maybe<string>) => {
  const seconds = Math.max(0, Math.round(((toIso ? Date.parse(toIso) : Date.now()) - Date.parse(fromIso)) / 1000))
  if (seconds < 60) return `${seconds} s`
  const minutes = Math.round(seconds / 60)
  return minutes < 60 ? `${minutes} min` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`
}
const isLive = (task: Task) => task.status !== 'ENDED'
// A window that ends now, or at the newest point when this browser's clock is behind the gateway's.
const windowEnding = (newest: number | undefined, length: number): [number, number] => {
  const end = Math.max(Date.now() / 1000, newest ?? 0)
  return [end - length / 1000, end]
}
// A window of at most `length` over times (seconds, oldest first), shrunk to what they cover
// (a minute at least), so a young series is not a sliver at the right edge.
const spanShown = (times: readonly number[], length: number): [number, number] => {
  const [from, end] = windowEnding(times.at(-1), length)
  return [Math.max(from, Math.min(times[0] ?? end, end - 60)), end]
}

// The key the gateway expects as `Authorization: Bearer <key>`: in this tab's sessionStorage
// only, sent in a header and in graphql-ws's connection_init, never in an address.
let apiKey = sessionStorage.getItem(KEY_STORAGE) || ''
const authorization = (): Record<string, string> => (apiKey ? { authorization: `Bearer ${apiKey}` } : {})

class KeyNeeded extends Error {}

interface GraphQLAnswer<T> {
  data?: T | null
  errors?: Array<{ message: string; extensions?: { code?: string } }>
}

async function request<N extends keyof Operations>(operationName: N, variables: Operations[N]['variables']): Promise<Operations[N]['data']> {
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json', ...authorization() },
    body: JSON.stringify({ query: operationText(operationName), operationName, variables }),
  })
  const answer = (await response.json().catch(() => ({}))) as GraphQLAnswer<Operations[N]['data']>
  const errors = answer.errors || []
  if (response.status === 401 || errors.some((error) => error.extensions?.code === 'UNAUTHENTICATED')) throw new KeyNeeded()
  if (errors.length > 0) throw new Error(errors.map((error) => error.message).join('; '))
  if (!response.ok || !answer.data) throw new Error(`the gateway answered ${response.status}`)
  return answer.data
}

function say(text: string, kind = 'info') {
  noticeEl.textContent = text
  noticeEl.dataset.kind = kind
  noticeEl.hidden = !text
}

function connection(state: string, text: string) {
  connectionEl.dataset.state = state
  connectionEl.textContent = text
}

const cssVar = (name: string) => getComputedStyle(document.documentElement).getPropertyValue(name).trim()

type Sample = DashboardSamplesSubscription['metricsSampled']
type Upstream = DashboardSummaryQuery['upstreams'][number]
type Counts = DashboardSummaryQuery['taskCounts'][number]
type Point = DashboardServiceQuery['serviceMetrics'][number]
/** A sparkline's points: seconds since the epoch, input bitrate. */
type Spark = Array<[number, number]>

/** One service code's section: the chart's series, its stats and its task rows. */
class Service {
  readonly el: HTMLElement
  readonly tbody: HTMLTableSectionElement
  readonly chartEl: HTMLElement
  // Seconds since the epoch, viewers (sum of the tasks' samples), live tasks (tasks sampled),
  // and the highest viewers inside each point.
  series: [number[], number[], number[]] = [[], [], []]
  peaks: number[] = []
  readonly rows = new Map<string, TaskRow>()
  loaded = false
  early: Sample[] = []
  upstream: Upstream | undefined
  readonly chart: uPlot

  constructor(readonly code: string) {
    const template = $<HTMLTemplateElement>('service-template')
    this.el = within<HTMLElement>(template.content, 'section').cloneNode(true) as HTMLElement
    this.el.dataset.serviceCode = code
    within(this.el, '.code').textContent = code
    this.tbody = within<HTMLTableSectionElement>(this.el, 'tbody')
    this.chartEl = within(this.el, '.chart')
    this.chart = new uPlot(this.chartOptions(), this.series, this.chartEl)
    // Only a change of width resizes: the chart's own height must not feed back into it.
    let width = 0
    new ResizeObserver(() => {
      if (this.chartEl.clientWidth === width) return
      width = this.chartEl.clientWidth
      this.chart.setSize({ width, height: 260 })
    }).observe(this.chartEl)
  }

  // The last hour; while the points span less, the span they cover.
  shown(): [number, number] {
    return spanShown(this.series[0], HOUR_MS)
  }

  chartOptions(): uPlot.Options {
    const axis = { stroke: cssVar('--muted'), grid: { stroke: cssVar('--grid'), width: 1 }, ticks: { stroke: cssVar('--grid') } }
    const stepped = uPlot.paths.stepped
    return {
      width: Math.max(300, this.chartEl.clientWidth || 900),
      height: 260,
      scales: {
        x: { time: true, range: () => this.shown() },
        tasks: { range: (_u, _min, max) => [0, Math.max(1, max)] },
        y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] },
      },
      series: [
        {},
        { label: 'Viewers', scale: 'y', stroke: cssVar('--viewers'), fill: cssVar('--viewers-fill'), width: 2, value: (_u, v) => count(v), points: { show: false } },
        { label: 'Live tasks', scale: 'tasks', stroke: cssVar('--tasks'), width: 2, ...(stepped ? { paths: stepped({ align: 1 }) } : {}), value: (_u, v) => count(v), points: { show: false } },
      ],
      axes: [
        axis,
        { ...axis, scale: 'y', values: (_u, ticks) => ticks.map(count) },
        { ...axis, scale: 'tasks', side: 1, grid: { show: false }, values: (_u, ticks) => ticks.map((t) => (Number.isInteger(t) ? count(t) : '')) },
      ],
      legend: { live: true },
    }
  }

  /** The series from the stored points, then the samples that came while they were read. */
  load(points: readonly Point[], tasks: readonly DashboardRowFragment[]) {
    this.series = [[], [], []]
    this.peaks = []
    for (const point of points) this.addPoint(Date.parse(point.at), point.viewers || 0, point.liveTasks || 0, point.viewersMax || point.viewers || 0)
    for (const { metrics, ...task } of tasks) {
      const spark: Spark = []
      for (const m of metrics || []) if (m.inputBitrate !== null) spark.push([Date.parse(m.at) / 1000, m.inputBitrate])
      this.upsert(task, spark)
    }
    this.loaded = true
    const last = this.series[0].at(-1) ?? 0
    for (const sample of this.early.splice(0)) this.sample(sample, last)
    this.draw()
  }

  addPoint(atMs: number, viewers: number, liveTasks: number, peak: number) {
    this.series[0].push(atMs / 1000)
    this.series[1].push(viewers)
    this.series[2].push(liveTasks)
    this.peaks.push(peak)
  }

  /**
   * One task's sample of a task_list answer: every task of an answer has the same time, so the
   * answer's point grows with each of its samples. A sample no newer than the stored points
   * (`after`) is in them already.
   */
  sample(event: Sample, after = 0) {
    if (!this.loaded) return void this.early.push(event)
    const at = Date.parse(event.at) / 1000
    const viewers = event.viewers || 0
    const row = this.upsert(event.task)
    const newest = row.spark.at(-1)?.[0]
    if (event.inputBitrate !== null && event.inputBitrate !== undefined && !(newest !== undefined && newest >= at)) row.spark.push([at, event.inputBitrate])
    if (at <= after) return
    const [times, sums, tasks] = this.series
    const last = times.length - 1
    if (last >= 0 && times[last] === at) {
      sums[last] = (sums[last] ?? 0) + viewers
      tasks[last] = (tasks[last] ?? 0) + 1
      this.peaks[last] = Math.max(this.peaks[last] ?? 0, sums[last] ?? 0)
    } else if (last < 0 || at > (times[last] ?? 0)) {
      this.addPoint(at * 1000, viewers, 1, viewers)
    }
    this.el.dataset.lastSampleAt = event.at
  }

  /** A task's row, made or refreshed from what an answer or an event says of it. */
  upsert(task: Task, spark?: Spark): TaskRow {
    let row = this.rows.get(task.id)
    if (!row) {
      row = new TaskRow(task)
      this.rows.set(task.id, row)
    }
    row.task = { ...row.task, ...task }
    row.dirty = true
    if (spark) row.spark = spark
    return row
  }

  stats(counts: Counts | undefined, upstream: Upstream | undefined) {
    const set = (name: string, text: string) => (within(this.el, `[data-stat="${name}"]`).textContent = text)
    set('liveTasks', count(counts ? counts.live + counts.waitingReconnect : 0))
    set('viewers', count(counts ? counts.viewers : 0))
    const callbacks = upstream?.callbacks
    set('missing', callbacks ? `${count(callbacks.missingStart)} / ${count(callbacks.missingEnd)}` : '–')
    set('delay', callbacks ? `${ms(callbacks.delayP50Ms)} / ${ms(callbacks.delayP99Ms)}` : '–')
    this.upstream = upstream
    this.freshness()
  }

  freshness() {
    const pill = within(this.el, '.freshness')
    const upstream = this.upstream
    if (!upstream || !upstream.configured) {
      pill.dataset.state = 'off'
      pill.textContent = 'task list not polled'
    } else if (upstream.stale) {
      pill.dataset.state = 'stale'
      pill.textContent = `stale: last answer ${ago(upstream.lastSuccessAt)}, ${upstream.consecutiveFailures} failed`
    } else {
      pill.dataset.state = 'fresh'
      pill.textContent = `task list answered ${ago(upstream.lastSuccessAt)}`
    }
  }

  draw() {
    // Points older than the window leave it; the x range follows the clock.
    const [from] = windowEnding(this.series[0].at(-1), HOUR_MS)
    let drop = 0
    while (drop < this.series[0].length && (this.series[0][drop] ?? 0) < from) drop++
    if (drop > 0) {
      for (const values of this.series) values.splice(0, drop)
      this.peaks.splice(0, drop)
    }
    this.chart.setData(this.series)
    this.chartEl.dataset.points = String(this.series[0].length)
    within(this.el, '[data-stat="peakViewers"]').textContent = this.peaks.length > 0 ? count(Math.max(...this.peaks)) : '–'
    this.drawRows()
  }

  drawRows() {
    const rows = [...this.rows.values()]
    const rank = (row: TaskRow) => [isLive(row.task) ? 0 : 1, isLive(row.task) ? -(row.task.viewers || 0) : -(row.task.endedAt ? Date.parse(row.task.endedAt) : 0)] as const
    rows.sort((a, b) => {
      const [ra, rb] = [rank(a), rank(b)]
      return ra[0] - rb[0] || ra[1] - rb[1] || String(b.task.startedAt).localeCompare(String(a.task.startedAt))
    })
    const live = rows.filter((row) => isLive(row.task))
    const ended = rows.filter((row) => !isLive(row.task)).slice(0, ENDED_ROWS)
    for (const row of rows.slice(live.length + ended.length)) {
      row.remove()
      this.rows.delete(row.task.id)
    }
    // Only rows something was said of are redrawn, and only rows out of place are moved.
    let before = this.tbody.firstElementChild
    for (const row of [...live, ...ended]) {
      if (row.dirty) row.update()
      if (row.tr === before) before = before.nextElementSibling
      else this.tbody.insertBefore(row.tr, before)
    }
    within(this.el, '.empty-tasks').hidden = this.rows.size > 0
  }
}

/** A task's table row, with its input-bitrate sparkline. */
class TaskRow {
  spark: Spark = []
  dirty = true
  readonly tr: HTMLTableRowElement
  readonly sparkEl: HTMLElement
  readonly chart: uPlot

  constructor(public task: Task) {
    this.tr = document.createElement('tr')
    this.tr.dataset.taskId = task.id
    this.tr.innerHTML =
      '<td class="task"><code></code></td><td class="user"></td><td class="started"></td><td><span class="badge status"></span></td><td><span class="badge health"></span></td>' +
      '<td class="num viewers"></td><td class="num peak"></td><td><div class="bitrate"><div class="spark"></div><span class="rate"></span></div></td><td class="missing"></td>' +
      '<td class="open"><a>Open in playground</a></td>'
    const link = within<HTMLAnchorElement>(this.tr, 'a')
    // What the link opens in the playground: the task's query, with its global id as its variable.
    link.href = `graphql#${new URLSearchParams({ query: operationText('DashboardTask'), variables: JSON.stringify({ id: task.id }, null, 2) })}`
    link.target = '_blank'
    link.rel = 'noopener'
    this.sparkEl = within(this.tr, '.spark')
    this.chart = new uPlot(
      {
        width: 140,
        height: 30,
        cursor: { show: false },
        legend: { show: false },
        select: { show: false, left: 0, top: 0, width: 0, height: 0 },
        axes: [{ show: false }, { show: false }],
        scales: {
          x: {
            time: true,
            range: () =>
              spanShown(
                this.spark.map((point) => point[0]),
                SPARK_MS,
              ),
          },
          y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.15)] },
        },
        series: [{}, { stroke: cssVar('--bitrate'), fill: cssVar('--bitrate-fill'), width: 1.5, points: { show: false } }],
      },
      [[], []],
      this.sparkEl,
    )
  }

  update() {
    this.dirty = false
    const task = this.task
    const cell = (name: string) => within(this.tr, `.${name}`)
    within(this.tr, '.task code').textContent = task.taskId
    cell('user').textContent = task.userName || '–'
    const started = cell('started')
    started.textContent = task.startedAt ? (isLive(task) ? duration(task.startedAt) : `${duration(task.startedAt, task.endedAt)}, ended ${ago(task.endedAt)}`) : '–'
    started.title = task.startedAt ? `started ${new Date(task.startedAt).toLocaleString()}` : ''
    const status = cell('status')
    status.textContent = task.status.replace('_', ' ').toLowerCase()
    status.dataset.value = task.status
    const health = cell('health')
    health.textContent = task.health.state.toLowerCase()
    health.dataset.value = task.health.state
    health.title = [task.health.reason, task.health.since && `since ${new Date(task.health.since).toLocaleTimeString()}`].filter(Boolean).join(', ')
    cell('viewers').textContent = count(task.viewers)
    cell('peak').textContent = count(task.peakViewers)
    const [from] = windowEnding(this.spark.at(-1)?.[0], SPARK_MS)
    while (this.spark.length > 0 && (this.spark[0]?.[0] ?? 0) < from) this.spark.shift()
    this.chart.setData([this.spark.map((point) => point[0]), this.spark.map((point) => point[1])])
    this.sparkEl.dataset.points = String(this.spark.length)
    const newest = this.spark.at(-1)
    cell('rate').textContent = isLive(task) && newest ? bitrate(newest[1]) : ''
    const missing = cell('missing')
    missing.replaceChildren(
      ...task.missingCallbacks.map((kind) => {
        const badge = document.createElement('span')
        badge.className = 'badge missing-kind'
        badge.textContent = kind.replace('_', ' ').toLowerCase()
        return badge
      }),
    )
    if (task.missingCallbacks.length === 0) missing.textContent = 'none'
    this.tr.classList.toggle('ended', !isLive(task))
  }

  remove() {
    this.chart.destroy()
    this.tr.remove()
  }
}

const services = new Map<string, Service>()
let socket: ReturnType<typeof graphqlWs.createClient> | undefined
let generation = 0
let drawPending = false
let summaryTimer: ReturnType<typeof setTimeout> | undefined
let summaryAt = 0

function serviceFor(code: string): Service {
  let service = services.get(code)
  if (!service) {
    service = new Service(code)
    services.set(code, service)
    const after = [...servicesEl.children].find((el) => ((el as HTMLElement).dataset.serviceCode ?? '') > code)
    servicesEl.insertBefore(service.el, after || null)
    void loadService(service, generation)
  }
  return service
}

async function loadService(service: Service, run: number) {
  try {
    const now = Date.now()
    const data = await request('DashboardService', {
      serviceCode: service.code,
      from: new Date(now - HOUR_MS).toISOString(),
      sparkFrom: new Date(now - SPARK_MS).toISOString(),
      liveRows: LIVE_ROWS,
      endedRows: ENDED_ROWS,
    })
    if (run !== generation) return
    service.load(
      data.serviceMetrics,
      [...data.live.edges, ...data.ended.edges].map((edge) => edge.node),
    )
  } catch (error) {
    if (run === generation) failed(error)
  }
}

// Redrawing once a frame at most: an answer of a thousand tasks is a thousand events.
function redraw() {
  if (drawPending) return
  drawPending = true
  requestAnimationFrame(() => {
    drawPending = false
    for (const service of services.values()) if (service.loaded) service.draw()
  })
}

async function summary(run: number) {
  summaryAt = Date.now()
  try {
    const data = await request('DashboardSummary', {})
    if (run !== generation) return
    const codes = new Set([...data.upstreams.map((u) => u.serviceCode), ...data.taskCounts.map((c) => c.serviceCode)])
    for (const code of codes) {
      serviceFor(code).stats(
        data.taskCounts.find((c) => c.serviceCode === code),
        data.upstreams.find((u) => u.serviceCode === code),
      )
    }
    if (codes.size === 0) say('No service code is configured for this key.')
    else say('')
  } catch (error) {
    if (run === generation) failed(error)
  }
}

// After events, counts and freshness are read again, at most once per SUMMARY_EVERY_MS.
function summarySoon() {
  if (summaryTimer) return
  const run = generation
  summaryTimer = setTimeout(
    () => {
      summaryTimer = undefined
      void summary(run)
    },
    Math.max(0, summaryAt + SUMMARY_EVERY_MS - Date.now()),
  )
}

function failed(error: unknown) {
  if (error instanceof KeyNeeded) {
    connection('key', 'API key needed')
    say(apiKey ? 'The gateway did not accept this API key: type another above.' : 'This gateway needs an API key: type it above.', 'warn')
    keyInput.focus()
    closeSocket()
    return
  }
  say(`Could not read the gateway: ${error instanceof Error ? error.message : String(error)}`, 'error')
}

// graphql-ws's dispose() settles a promise that rejects with the CloseEvent when the socket was
// still connecting or had just been refused (4401); nobody else awaits it, so it is caught here.
function closeSocket() {
  if (socket) Promise.resolve(socket.dispose()).catch(() => {})
  socket = undefined
}

const closeCode = (event: unknown) => (event && typeof event === 'object' && 'code' in event ? event.code : undefined)

function listen<N extends 'DashboardSamples' | 'DashboardChanges'>(operationName: N, onEvent: (data: Operations[N]['data']) => void, run: number) {
  socket?.subscribe<Operations[N]['data']>(
    { query: operationText(operationName), operationName },
    {
      next: (result) => {
        if (run !== generation) return
        if (result.errors) return say(`Subscription error: ${result.errors.map((e) => e.message).join('; ')}`, 'error')
        if (!result.data) return
        onEvent(result.data)
        redraw()
        summarySoon()
      },
      error: (error) => {
        if (run !== generation) return
        if (closeCode(error) === 4401) return failed(new KeyNeeded())
        if (Array.isArray(error)) say(`Subscription error: ${error.map((e: { message: string }) => e.message).join('; ')}`, 'error')
      },
      complete: () => {},
    },
  )
}

// One row per endpoint the key may see; the panel stays hidden when there is none.
const webhooksEl = $('webhooks')
const webhookRows = new Map<string, HTMLTableRowElement>()
async function webhooks(run: number) {
  let endpoints: DashboardWebhooksQuery['webhookEndpoints']
  try {
    endpoints = (await request('DashboardWebhooks', {})).webhookEndpoints
  } catch {
    return // the summary says what is wrong with the gateway or the key
  }
  if (run !== generation) return
  webhooksEl.hidden = endpoints.length === 0
  const body = within(webhooksEl, 'tbody')
  for (const endpoint of endpoints) {
    let row = webhookRows.get(endpoint.name)
    if (!row) {
      row = document.createElement('tr')
      row.dataset.endpoint = endpoint.name
      for (const name of ['name', 'state', 'pending num', 'dead num', 'success', 'error', 'act']) {
        const cell = document.createElement('td')
        cell.className = name
        row.append(cell)
      }
      const button = document.createElement('button')
      button.type = 'button'
      button.textContent = 'Replay dead letters'
      const said = document.createElement('span')
      said.className = 'replayed'
      button.addEventListener('click', () => void replay(endpoint.name, button, said))
      within(row, '.act').append(button, said)
      webhookRows.set(endpoint.name, row)
      body.append(row)
    }
    within(row, '.name').textContent = endpoint.name
    const badge = document.createElement('span')
    badge.className = 'badge'
    badge.dataset.value = endpoint.state
    badge.textContent = endpoint.state
    within(row, '.state').replaceChildren(badge)
    within(row, '.pending').textContent = count(endpoint.pending)
    within(row, '.dead').textContent = count(endpoint.deadLetters)
    within(row, '.success').textContent = endpoint.lastSuccessAt ? ago(endpoint.lastSuccessAt) : '–'
    within(row, '.error').textContent = endpoint.lastError || ''
    within<HTMLButtonElement>(row, '.act button').disabled = endpoint.deadLetters === 0
  }
}

// A key that may only read is told so by the gateway (FORBIDDEN); its message is shown in the row.
async function replay(name: string, button: HTMLButtonElement, said: HTMLElement) {
  button.disabled = true
  try {
    const data = await request('DashboardReplay', { endpoint: name })
    said.textContent = `${count(data.redeliverWebhooks)} put back in line`
  } catch (error) {
    said.textContent = error instanceof Error ? error.message : String(error)
  }
  void webhooks(generation)
}

/** Everything read afresh: on opening the page and after a new key. */
function start() {
  generation += 1
  const run = generation
  closeSocket()
  services.clear()
  servicesEl.replaceChildren()
  forgetButton.hidden = !apiKey
  keyInput.value = ''
  keyInput.placeholder = apiKey ? 'kept for this tab' : 'none needed without keys'
  say('Loading…')
  connection('connecting', 'connecting')
  // One socket for both subscriptions; it reconnects for as long as the page is open, except
  // when the key is refused (4401).
  socket = graphqlWs.createClient({
    url: socketUrl.href,
    connectionParams: () => authorization(),
    retryAttempts: Infinity,
    shouldRetry: (event) => closeCode(event) !== 4401,
    on: {
      connected: () => void (run === generation && connection('live', 'live')),
      closed: (event) => void (run === generation && event && closeCode(event) !== 4401 && connection('down', 'reconnecting')),
    },
  })
  // Subscribed first, so no answer falls between what is read and what is pushed.
  listen('DashboardSamples', (data) => serviceFor(data.metricsSampled.task.serviceCode).sample(data.metricsSampled), run)
  listen(
    'DashboardChanges',
    (data) => {
      const task = data.taskChanged
      const service = serviceFor(task.serviceCode)
      if (service.loaded) service.upsert(task)
    },
    run,
  )
  void summary(run)
  webhookRows.clear()
  within(webhooksEl, 'tbody').replaceChildren()
  void webhooks(run)
}

// Never submitted: the policy allows no form action, and a GET would put the key in the address.
$('key-form').addEventListener('submit', (event) => {
  event.preventDefault()
  const typed = keyInput.value.trim()
  if (!typed) return
  apiKey = typed
  sessionStorage.setItem(KEY_STORAGE, apiKey)
  start()
})
forgetButton.addEventListener('click', () => {
  apiKey = ''
  sessionStorage.removeItem(KEY_STORAGE)
  start()
})
// The window slides and "answered … ago" counts on even when no sample comes.
setInterval(() => {
  for (const service of services.values()) {
    service.freshness()
    for (const row of service.rows.values()) row.dirty = true
  }
  redraw()
  void webhooks(generation)
}, 5000)

start()
