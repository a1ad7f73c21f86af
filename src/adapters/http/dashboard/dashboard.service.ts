// One service code's section of the dashboard (its chart, stats and task rows) and a task's row.
import type { DashboardRowFragment } from '../../../../schema/client/operations.js'
import {
  $,
  HOUR_MS,
  ENDED_ROWS,
  type Task,
  within,
  count,
  ago,
  ms,
  isLive,
  windowEnding,
  spanShown,
  cssVar,
  viewersSeries,
  type Sample,
  type Upstream,
  type Counts,
  type Point,
  type Spark,
} from './dashboard.page.js'
import { TaskRow } from './dashboard.row.js'

// The chart is "the last hour": a young series spans five minutes at least, ticked in whole minutes.
const CHART_LEAST_MS = 5 * 60_000
const MINUTE_TICKS = [60, 120, 300, 600, 900, 1200, 1800, 3600]
const minuteOf = new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit' })

/** One service code's section: the chart's series, its stats and its task rows. */
export class Service {
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
  // Whether the service's figures were read: a broadcaster's view reads none (they are the service's).
  summarized = false
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

  // The last hour; while the points span less, the span they cover, five minutes at least.
  shown(): [number, number] {
    return spanShown(this.series[0], HOUR_MS, CHART_LEAST_MS)
  }

  chartOptions(): uPlot.Options {
    const axis = {
      stroke: cssVar('--muted'),
      grid: { stroke: cssVar('--grid'), width: 1 },
      ticks: { stroke: cssVar('--grid') },
    }
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
        { ...viewersSeries(), points: { show: false } },
        {
          label: 'Live tasks',
          scale: 'tasks',
          stroke: cssVar('--tasks'),
          width: 2,
          ...(stepped ? { paths: stepped({ align: 1 }) } : {}),
          value: (_u, v) => count(v),
          points: { show: false },
        },
      ],
      axes: [
        // Whole minutes, as hours and minutes alone, far enough apart that no two labels touch: uPlot's own
        // ticks go down to seconds over a young series, and label the first with its date as well.
        {
          ...axis,
          space: 90,
          incrs: MINUTE_TICKS,
          values: (_u, ticks) => {
            const labels = ticks.map((t) => minuteOf.format(t * 1000))
            // What the canvas shows, for whoever reads the page (and its browser test).
            this.chartEl.dataset.timeLabels = labels.join(' | ')
            return labels
          },
        },
        { ...axis, scale: 'y', values: (_u, ticks) => ticks.map(count) },
        {
          ...axis,
          scale: 'tasks',
          side: 1,
          grid: { show: false },
          values: (_u, ticks) => ticks.map((t) => (Number.isInteger(t) ? count(t) : '')),
        },
      ],
      legend: { live: true },
    }
  }

  /** The series from the stored points, then the samples that came while they were read. */
  load(points: readonly Point[], tasks: readonly DashboardRowFragment[]) {
    this.series = [[], [], []]
    this.peaks = []
    for (const point of points)
      this.addPoint(
        Date.parse(point.at),
        point.viewers || 0,
        point.liveTasks || 0,
        point.viewersMax || point.viewers || 0,
      )
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
    if (event.inputBitrate !== null && event.inputBitrate !== undefined && !(newest !== undefined && newest >= at))
      row.spark.push([at, event.inputBitrate])
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
    this.summarized = true
    this.freshness()
  }

  freshness() {
    const pill = within(this.el, '.freshness')
    // Unread is not "not polled": a view that may not read the service's upstream shows no pill.
    pill.hidden = !this.summarized
    const upstream = this.upstream
    if (!upstream?.configured) {
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
    within(this.el, '[data-stat="peakViewers"]').textContent =
      this.peaks.length > 0 ? count(Math.max(...this.peaks)) : '–'
    this.drawRows()
  }

  drawRows() {
    const rows = [...this.rows.values()]
    const rank = (row: TaskRow) =>
      [
        isLive(row.task) ? 0 : 1,
        isLive(row.task) ? -(row.task.viewers || 0) : -(row.task.endedAt ? Date.parse(row.task.endedAt) : 0),
      ] as const
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
