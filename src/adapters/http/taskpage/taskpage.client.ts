// The page of one task (/dashboard/task/<id>): its header, its audience and input bitrate over its
// life, and its timeline, each entry marked with where it came from, kept growing over graphql-ws
// (Subscription.taskTimeline, resumed after the last entry read). Key and requests as the dashboard's.
import { END_REASONS } from '../dashboard/dashboard.row.js'
import {
  $,
  type Operations,
  socketUrl,
  operationText,
  keyInput,
  forgetButton,
  count,
  bitrate,
  duration,
  cssVar,
  authorization,
  KeyNeeded,
  request,
  say,
  connection,
  currentKey,
  useKey,
  ACCESS_CHANGED,
  viewersSeries,
} from '../dashboard/dashboard.page.js'
import { type Entry, exportButtons, readTimeline } from './timeline.export.js'
import { bandsRange, drawBands, followMarked, incidentHref, setIncidents } from './taskpage.bands.js'

type TaskData = NonNullable<Operations['DashboardTask']['data']['task']>
const id = decodeURIComponent(window.location.pathname.split('/').pop() ?? '')
const rows = $('timeline').querySelector('tbody') as HTMLTableSectionElement
const shown = new Map<string, HTMLTableRowElement>()
let socket: ReturnType<typeof graphqlWs.createClient> | undefined
let chart: uPlot | undefined
// The task's life in seconds, the chart's x range: a task of seconds has a point or two, which
// uPlot alone would spread over years.
let life: [number, number] = [0, 60]
let taskId = ''
let generation = 0
let refreshTimer: ReturnType<typeof setTimeout> | undefined
// The header and chart are read again at most this often while entries arrive (a sample is no entry,
// but a live task's line grows with its answers).
const REFRESH_EVERY_MS = 5000

function failed(error: unknown) {
  if (error instanceof KeyNeeded) {
    connection('key', 'API key needed')
    say(
      currentKey()
        ? 'The gateway did not accept this API key: type another above.'
        : 'This gateway needs an API key: type it above.',
      'warn',
    )
    keyInput.focus()
    return
  }
  say(`Could not read the gateway: ${error instanceof Error ? error.message : String(error)}`, 'error')
}

function header(task: TaskData) {
  taskId = task.taskId
  document.title = `livegate task ${task.taskId}`
  $('task-title').textContent = `${task.serviceCode} · ${task.taskId}`
  const status = $('task-status')
  status.textContent = task.status.replace('_', ' ').toLowerCase()
  status.dataset.value = task.status
  const end = $('task-end')
  const [said, why] = (task.endReason && END_REASONS[task.endReason]) || [task.endReason?.toLowerCase() ?? '', '']
  end.hidden = !task.endReason
  end.textContent = said
  end.title = why
  end.dataset.value = task.endReason ?? ''
  const facts: Array<[string, string]> = [
    ['User', task.userName || '–'],
    ['Started', task.startedAt ? new Date(task.startedAt).toLocaleString() : '–'],
    ['Ran', task.startedAt ? duration(task.startedAt, task.endedAt) : '–'],
    ['Viewers', `${count(task.viewers)} now, ${count(task.peakViewers)} at most`],
    ['Health', task.health.state.toLowerCase()],
    ['Missing callbacks', task.missingCallbacks.map((kind) => kind.toLowerCase()).join(', ') || 'none'],
  ]
  $('task-facts').replaceChildren(
    ...facts.flatMap(([term, value]) => {
      const dt = document.createElement('dt')
      dt.textContent = term
      const dd = document.createElement('dd')
      dd.textContent = value
      dd.dataset.fact = term.toLowerCase()
      return [dt, dd]
    }),
  )
  $('task-outputs').replaceChildren(
    ...task.outputs.map((output) => {
      const item = document.createElement('li')
      const link = document.createElement('a')
      link.textContent = `play ${output.tag}`
      // An output the cloud gave no play address has its tag alone.
      if (output.playUrl) {
        link.href = output.playUrl
        link.target = '_blank'
        link.rel = 'noopener'
      }
      item.append(link, ` ${count(output.connections)} connections`)
      return item
    }),
  )
}

function drawChart(task: TaskData) {
  const el = $('task-chart')
  const points = task.metrics
  const data: uPlot.AlignedData = [
    points.map((point) => Date.parse(point.at) / 1000),
    points.map((point) => point.viewers),
    points.map((point) => point.inputBitrate ?? null),
  ]
  el.dataset.points = String(points.length)
  const times = data[0]
  const start = Math.min(...(task.startedAt ? [Date.parse(task.startedAt) / 1000] : []), times[0] ?? Date.now() / 1000)
  const end = Math.max(task.endedAt ? Date.parse(task.endedAt) / 1000 : Date.now() / 1000, times.at(-1) ?? 0)
  setIncidents(task.incidents)
  // A minute bucket starts before the task did: a minute at least, so one point is not at the edge.
  life = bandsRange([start, Math.max(end, start + 60)])
  if (chart) return chart.setData(data)
  const axis = {
    stroke: cssVar('--muted'),
    grid: { stroke: cssVar('--grid'), width: 1 },
    ticks: { stroke: cssVar('--grid') },
  }
  chart = new uPlot(
    {
      width: Math.max(300, el.clientWidth || 900),
      height: 260,
      scales: { x: { time: true, range: () => life }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
      series: [
        {},
        viewersSeries(),
        { label: 'Input bitrate', scale: 'bps', stroke: cssVar('--bitrate'), width: 1.5, value: (_u, v) => bitrate(v) },
      ],
      axes: [
        axis,
        { ...axis, scale: 'y' },
        { ...axis, scale: 'bps', side: 1, grid: { show: false }, values: (_u, ticks) => ticks.map((t) => bitrate(t)) },
      ],
      hooks: { draw: [drawBands] },
    },
    data,
    el,
  )
}

/** An entry's row: added at its place, or its summary updated when it comes again. */
function show(entry: Entry) {
  let row = shown.get(entry.cursor)
  if (!row) {
    row = document.createElement('tr')
    row.innerHTML =
      '<td class="at"></td><td><span class="badge source"></span></td><td class="kind"></td><td class="summary"></td><td class="subject"></td>'
    shown.set(entry.cursor, row)
    rows.append(row)
  }
  row.dataset.cursor = entry.cursor
  row.dataset.source = entry.source
  row.dataset.kind = entry.kind
  const cell = (name: string) => row.querySelector(`.${name}`) as HTMLElement
  cell('at').textContent = new Date(entry.at).toLocaleString()
  cell('at').title = entry.at
  const source = cell('source')
  source.textContent = entry.source
  source.dataset.value = entry.source
  cell('kind').textContent = entry.kind.toLowerCase().replaceAll('_', ' ')
  cell('summary').textContent = entry.summary
  cell('subject').textContent = entry.subject?.id ?? ''
  // An incident's entry marks its window on the chart.
  if (entry.kind === 'INCIDENT' && entry.subject) {
    const link = document.createElement('a')
    link.href = incidentHref(entry.subject.id)
    link.textContent = entry.subject.id
    cell('subject').replaceChildren(link)
  }
  $('timeline').dataset.entries = String(shown.size)
}

function subscribe(after: string | null, run: number) {
  socket?.subscribe<Operations['DashboardTimelineLive']['data']>(
    { query: operationText('DashboardTimelineLive'), operationName: 'DashboardTimelineLive', variables: { id, after } },
    {
      next: (result) => {
        if (run !== generation) return
        if (result.errors) return say(`Subscription error: ${result.errors.map((e) => e.message).join('; ')}`, 'error')
        if (!result.data) return
        show(result.data.taskTimeline)
        refreshSoon(run)
      },
      error: () => {},
      complete: () => {},
    },
  )
}

async function readTask(run: number): Promise<boolean> {
  const data = await request('DashboardTask', { id })
  if (run !== generation) return false
  if (!data.task) {
    say(`No task ${id} for this key.`, 'warn')
    return false
  }
  header(data.task)
  drawChart(data.task)
  // A live task's audience grows with every sample, which is no timeline entry.
  if (data.task.status !== 'ENDED') refreshSoon(run)
  return true
}

function refreshSoon(run: number) {
  if (refreshTimer) return
  refreshTimer = setTimeout(() => {
    refreshTimer = undefined
    if (run === generation) readTask(run).catch(failed)
  }, REFRESH_EVERY_MS)
}

async function start() {
  generation += 1
  const run = generation
  if (socket) Promise.resolve(socket.dispose()).catch(() => {})
  socket = undefined
  forgetButton.hidden = !currentKey()
  keyInput.value = ''
  say('Loading…')
  try {
    if (!(await readTask(run))) return
    const entries = await readTimeline(id)
    if (run !== generation) return
    for (const entry of entries) show(entry)
    say('')
    // Resumed after the last entry read, so nothing falls between the query and the events.
    socket = graphqlWs.createClient({
      url: socketUrl.href,
      connectionParams: () => authorization(),
      retryAttempts: Infinity,
      on: {
        connected: () => void (run === generation && connection('live', 'live')),
        closed: () => void (run === generation && connection('down', 'reconnecting')),
      },
    })
    subscribe(entries.at(-1)?.cursor ?? null, run)
  } catch (error) {
    if (run === generation) failed(error)
  }
}

$('key-form').addEventListener('submit', (event) => {
  event.preventDefault()
  const typed = keyInput.value.trim()
  if (!typed) return
  useKey(typed)
  void start()
})
forgetButton.addEventListener('click', () => {
  useKey('')
  void start()
})
// Signed in, renewed or signed out (signin/signin.client.ts, on this page too): read as the new caller.
window.addEventListener(ACCESS_CHANGED, () => void start())
exportButtons(id, () => taskId, failed)
followMarked(() => chart?.redraw(false))
void start()
