// A task's row in a service's table of the dashboard.
import {
  SPARK_MS,
  type Task,
  operationText,
  taskPageHref,
  within,
  count,
  bitrate,
  ago,
  duration,
  isLive,
  windowEnding,
  spanShown,
  cssVar,
  type Spark,
} from './dashboard.page.js'

/** Why a task ended, as its badge says it and as its title explains it (the schema's EndReason). */
export const END_REASONS: Record<string, [string, string]> = {
  STOPPED: ['stopped', 'stopped through livegate (Stop), accepted by the cloud'],
  USER_STOPPED: ['user stopped', 'the live end said the broadcaster stopped (reach_end=1)'],
  ABNORMAL: ['abnormal', 'the live end said it ended abnormally (reach_end=0)'],
  VANISHED: ['vanished', 'it left the task list without a live end callback'],
}

/** A task's table row, with its input-bitrate sparkline. */
export class TaskRow {
  spark: Spark = []
  dirty = true
  readonly tr: HTMLTableRowElement
  readonly sparkEl: HTMLElement
  readonly chart: uPlot

  constructor(public task: Task) {
    this.tr = document.createElement('tr')
    this.tr.dataset.taskId = task.id
    this.tr.innerHTML =
      '<td class="task"><a class="task-link"><code></code></a></td><td class="user"></td><td class="started"></td><td><span class="badge ' +
      'status"></span><span class="badge end-reason" hidden></span></td>' +
      '<td><span class="badge health"></span></td>' +
      '<td class="num viewers"></td><td class="num peak"></td><td><div class="bitrate"><div ' +
      'class="spark"></div><span class="rate"></span></div></td><td class="missing"></td>' +
      '<td class="open"><a>Open in playground</a></td>'
    within<HTMLAnchorElement>(this.tr, 'a.task-link').href = taskPageHref(task.id)
    const link = within<HTMLAnchorElement>(this.tr, '.open a')
    // What the link opens in the playground: the task's query, with its global id as its variable.
    const variables = JSON.stringify({ id: task.id }, null, 2)
    link.href = `graphql#${new URLSearchParams({ query: operationText('DashboardTask'), variables })}`
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
        series: [
          {},
          { stroke: cssVar('--bitrate'), fill: cssVar('--bitrate-fill'), width: 1.5, points: { show: false } },
        ],
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
    started.textContent = task.startedAt
      ? isLive(task)
        ? duration(task.startedAt)
        : `${duration(task.startedAt, task.endedAt)}, ended ${ago(task.endedAt)}`
      : '–'
    started.title = task.startedAt ? `started ${new Date(task.startedAt).toLocaleString()}` : ''
    const status = cell('status')
    status.textContent = task.status.replace('_', ' ').toLowerCase()
    status.dataset.value = task.status
    // Why it ended, from the task itself: every tab shows it, whichever pressed Stop.
    const reason = cell('end-reason')
    const [said, why] = (task.endReason && END_REASONS[task.endReason]) || [task.endReason?.toLowerCase() ?? '', '']
    reason.hidden = !task.endReason
    reason.textContent = said
    reason.title = why
    reason.dataset.value = task.endReason ?? ''
    // The stop asked for it, from any tab: dashboard.actions.ts shows it on the row.
    this.tr.dataset.stopState = task.stopRequest?.state ?? ''
    const health = cell('health')
    health.textContent = task.health.state.toLowerCase()
    health.dataset.value = task.health.state
    // "Starving since 3:37:05 PM. Its input bytes did not grow…": the reason is a sentence of its own.
    const since = task.health.since && `since ${new Date(task.health.since).toLocaleTimeString()}`
    const state = task.health.state.charAt(0) + task.health.state.slice(1).toLowerCase().replaceAll('_', ' ')
    health.title = [since && `${state} ${since}.`, task.health.reason].filter(Boolean).join(' ')
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
