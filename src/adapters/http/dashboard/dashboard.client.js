// The dashboard page's own script, run by the browser as is (no build step). uPlot and graphql-ws
// are the prebuilt browser builds the page loads before this file, both served by livegate.
/* global uPlot, graphqlWs */
;(() => {
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

  const TASK_FIELDS = 'id taskId serviceCode userName status startedAt endedAt viewers peakViewers health { state since reason } missingCallbacks'
  const SUMMARY = `query DashboardSummary {
    upstreams { serviceCode configured stale lastSuccessAt consecutiveFailures callbacks { missingStart missingEnd delayP50Ms delayP99Ms } }
    taskCounts { serviceCode live waitingReconnect viewers }
  }`
  const SERVICE = `query DashboardService($serviceCode: String!, $from: DateTime!, $sparkFrom: DateTime!) {
    serviceMetrics(serviceCode: $serviceCode, step: RAW, from: $from) { at liveTasks viewers viewersMax }
    live: tasks(filter: { serviceCode: $serviceCode, status: [LIVE, WAITING_RECONNECT] }, first: ${LIVE_ROWS}) { edges { node { ...DashboardRow } } }
    ended: tasks(filter: { serviceCode: $serviceCode, status: [ENDED] }, first: ${ENDED_ROWS}) { edges { node { ...DashboardRow } } }
  }
  fragment DashboardRow on Task { ${TASK_FIELDS} metrics(step: MINUTE, from: $sparkFrom) { at inputBitrate } }`
  const SAMPLES = `subscription DashboardSamples { metricsSampled { at viewers inputBitrate task { ${TASK_FIELDS} } } }`
  const CHANGES = `subscription DashboardChanges { taskChanged { ${TASK_FIELDS} } }`
  // What a task row's link opens in the playground, with the task's global id as its variable.
  const PLAYGROUND_QUERY = `# One task as the dashboard shows it, with its samples by minute.
query DashboardTask($id: ID!) {
  task(id: $id) {
    id taskId serviceCode userName status startedAt endedAt endReason
    viewers peakViewers missingCallbacks
    health { state since reason }
    outputs { tag playUrl connections }
    metrics(step: MINUTE) { at samples viewers viewersMax inputBitrate outputBitrate }
  }
}
`

  const WEBHOOKS = 'query DashboardWebhooks { webhookEndpoints { name state pending deadLetters lastSuccessAt lastError } }'
  const REPLAY = 'mutation DashboardReplay($endpoint: String!) { redeliverWebhooks(endpoint: $endpoint) }'

  const $ = (id) => document.getElementById(id)
  const servicesEl = $('services')
  const noticeEl = $('notice')
  const connectionEl = $('connection')
  const keyInput = $('api-key')
  const forgetButton = $('forget-key')

  const numbers = new Intl.NumberFormat('en')
  const count = (n) => (n === null || n === undefined ? '–' : numbers.format(n))
  const bitrate = (bps) => {
    if (bps === null || bps === undefined) return '–'
    const units = [
      ['Gb/s', 1e9],
      ['Mb/s', 1e6],
      ['kb/s', 1e3],
    ]
    for (const [unit, size] of units) if (bps >= size) return `${(bps / size).toFixed(bps >= size * 10 ? 0 : 1)} ${unit}`
    return `${Math.round(bps)} b/s`
  }
  const ago = (iso) => {
    if (!iso) return 'never'
    const seconds = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000))
    return seconds < 90 ? `${seconds} s ago` : seconds < 5400 ? `${Math.round(seconds / 60)} min ago` : `${Math.round(seconds / 3600)} h ago`
  }
  const ms = (value) => {
    if (value === null || value === undefined) return '–'
    return value >= 1000 ? `${(value / 1000).toFixed(value >= 10_000 ? 0 : 1)} s` : `${Math.round(value)} ms`
  }
  const duration = (fromIso, toIso) => {
    const seconds = Math.max(0, Math.round(((toIso ? Date.parse(toIso) : Date.now()) - Date.parse(fromIso)) / 1000))
    if (seconds < 60) return `${seconds} s`
    const minutes = Math.round(seconds / 60)
    return minutes < 60 ? `${minutes} min` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`
  }
  const isLive = (task) => task.status !== 'ENDED'
  // A window that ends now, or at the newest point when this browser's clock is behind the gateway's.
  const windowEnding = (newest, length) => {
    const end = Math.max(Date.now() / 1000, newest ?? 0)
    return [end - length / 1000, end]
  }
  // A window of at most `length` over times (seconds, oldest first), shrunk to what they cover
  // (a minute at least), so a young series is not a sliver at the right edge.
  const spanShown = (times, length) => {
    const [from, end] = windowEnding(times.at(-1), length)
    return [Math.max(from, Math.min(times[0] ?? end, end - 60)), end]
  }

  // The key the gateway expects as `Authorization: Bearer <key>`: in this tab's sessionStorage
  // only, sent in a header and in graphql-ws's connection_init, never in an address.
  let apiKey = sessionStorage.getItem(KEY_STORAGE) || ''
  const authorization = () => (apiKey ? { authorization: `Bearer ${apiKey}` } : {})

  class KeyNeeded extends Error {}

  async function request(query, variables = {}) {
    const response = await fetch(endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json', ...authorization() },
      body: JSON.stringify({ query, variables }),
    })
    const answer = await response.json().catch(() => ({}))
    const errors = answer.errors || []
    if (response.status === 401 || errors.some((error) => error.extensions && error.extensions.code === 'UNAUTHENTICATED')) throw new KeyNeeded()
    if (errors.length > 0) throw new Error(errors.map((error) => error.message).join('; '))
    if (!response.ok || !answer.data) throw new Error(`the gateway answered ${response.status}`)
    return answer.data
  }

  function say(text, kind = 'info') {
    noticeEl.textContent = text
    noticeEl.dataset.kind = kind
    noticeEl.hidden = !text
  }

  function connection(state, text) {
    connectionEl.dataset.state = state
    connectionEl.textContent = text
  }

  const cssVar = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim()

  /** One service code's section: the chart's series, its stats and its task rows. */
  class Service {
    constructor(code) {
      this.code = code
      this.el = $('service-template').content.firstElementChild.cloneNode(true)
      this.el.dataset.serviceCode = code
      this.el.querySelector('.code').textContent = code
      this.tbody = this.el.querySelector('tbody')
      this.chartEl = this.el.querySelector('.chart')
      // Seconds since the epoch, viewers (sum of the tasks' samples), live tasks (tasks sampled),
      // and the highest viewers inside each point.
      this.series = [[], [], []]
      this.peaks = []
      this.rows = new Map()
      this.loaded = false
      this.early = []
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
    shown() {
      return spanShown(this.series[0], HOUR_MS)
    }

    chartOptions() {
      const axis = { stroke: cssVar('--muted'), grid: { stroke: cssVar('--grid'), width: 1 }, ticks: { stroke: cssVar('--grid') } }
      return {
        width: Math.max(300, this.chartEl.clientWidth || 900),
        height: 260,
        scales: { x: { time: true, range: () => this.shown() }, tasks: { range: (_u, _min, max) => [0, Math.max(1, max)] }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
        series: [
          {},
          { label: 'Viewers', scale: 'y', stroke: cssVar('--viewers'), fill: cssVar('--viewers-fill'), width: 2, value: (_u, v) => count(v), points: { show: false } },
          { label: 'Live tasks', scale: 'tasks', stroke: cssVar('--tasks'), width: 2, paths: uPlot.paths.stepped({ align: 1 }), value: (_u, v) => count(v), points: { show: false } },
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
    load(points, tasks) {
      this.series = [[], [], []]
      this.peaks = []
      for (const point of points) this.addPoint(Date.parse(point.at), point.viewers || 0, point.liveTasks || 0, point.viewersMax || point.viewers || 0)
      for (const task of tasks)
        this.upsert(
          task,
          (task.metrics || []).filter((m) => m.inputBitrate !== null).map((m) => [Date.parse(m.at) / 1000, m.inputBitrate]),
        )
      this.loaded = true
      const last = this.series[0].at(-1) ?? 0
      for (const sample of this.early.splice(0)) this.sample(sample, last)
      this.draw()
    }

    addPoint(atMs, viewers, liveTasks, peak) {
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
    sample(event, after = 0) {
      if (!this.loaded) return void this.early.push(event)
      const at = Date.parse(event.at) / 1000
      const viewers = event.viewers || 0
      const row = this.upsert(event.task)
      if (event.inputBitrate !== null && event.inputBitrate !== undefined && !(row.spark.at(-1)?.[0] >= at)) row.spark.push([at, event.inputBitrate])
      if (at <= after) return
      const last = this.series[0].length - 1
      if (last >= 0 && this.series[0][last] === at) {
        this.series[1][last] += viewers
        this.series[2][last] += 1
        this.peaks[last] = Math.max(this.peaks[last], this.series[1][last])
      } else if (last < 0 || at > this.series[0][last]) {
        this.addPoint(at * 1000, viewers, 1, viewers)
      }
      this.el.dataset.lastSampleAt = event.at
    }

    /** A task's row, made or refreshed from what an answer or an event says of it. */
    upsert(task, spark) {
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

    stats(counts, upstream) {
      const set = (name, text) => (this.el.querySelector(`[data-stat="${name}"]`).textContent = text)
      set('liveTasks', count(counts ? counts.live + counts.waitingReconnect : 0))
      set('viewers', count(counts ? counts.viewers : 0))
      const callbacks = upstream && upstream.callbacks
      set('missing', callbacks ? `${count(callbacks.missingStart)} / ${count(callbacks.missingEnd)}` : '–')
      set('delay', callbacks ? `${ms(callbacks.delayP50Ms)} / ${ms(callbacks.delayP99Ms)}` : '–')
      this.upstream = upstream
      this.freshness()
    }

    freshness() {
      const pill = this.el.querySelector('.freshness')
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
      while (drop < this.series[0].length && this.series[0][drop] < from) drop++
      if (drop > 0) {
        for (const values of this.series) values.splice(0, drop)
        this.peaks.splice(0, drop)
      }
      this.chart.setData(this.series)
      this.chartEl.dataset.points = String(this.series[0].length)
      this.el.querySelector('[data-stat="peakViewers"]').textContent = this.peaks.length > 0 ? count(Math.max(...this.peaks)) : '–'
      this.drawRows()
    }

    drawRows() {
      const rows = [...this.rows.values()]
      const rank = (row) => [isLive(row.task) ? 0 : 1, isLive(row.task) ? -(row.task.viewers || 0) : -Date.parse(row.task.endedAt || 0)]
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
      this.el.querySelector('.empty-tasks').hidden = this.rows.size > 0
    }
  }

  /** A task's table row, with its input-bitrate sparkline. */
  class TaskRow {
    constructor(task) {
      this.task = task
      this.spark = []
      this.tr = document.createElement('tr')
      this.tr.dataset.taskId = task.id
      this.tr.innerHTML =
        '<td class="task"><code></code></td><td class="user"></td><td class="started"></td><td><span class="badge status"></span></td><td><span class="badge health"></span></td>' +
        '<td class="num viewers"></td><td class="num peak"></td><td><div class="bitrate"><div class="spark"></div><span class="rate"></span></div></td><td class="missing"></td>' +
        '<td class="open"><a>Open in playground</a></td>'
      const link = this.tr.querySelector('a')
      link.href = `graphql#${new URLSearchParams({ query: PLAYGROUND_QUERY, variables: JSON.stringify({ id: task.id }, null, 2) })}`
      link.target = '_blank'
      link.rel = 'noopener'
      this.sparkEl = this.tr.querySelector('.spark')
      this.chart = new uPlot(
        {
          width: 140,
          height: 30,
          cursor: { show: false },
          legend: { show: false },
          select: { show: false },
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
      const cell = (name) => this.tr.querySelector(`.${name}`)
      this.tr.querySelector('.task code').textContent = task.taskId
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
      while (this.spark.length > 0 && this.spark[0][0] < from) this.spark.shift()
      this.chart.setData([this.spark.map((point) => point[0]), this.spark.map((point) => point[1])])
      this.sparkEl.dataset.points = String(this.spark.length)
      cell('rate').textContent = isLive(task) && this.spark.length > 0 ? bitrate(this.spark.at(-1)[1]) : ''
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

  const services = new Map()
  let socket
  let generation = 0
  let drawPending = false
  let summaryTimer
  let summaryAt = 0

  function serviceFor(code) {
    let service = services.get(code)
    if (!service) {
      service = new Service(code)
      services.set(code, service)
      const after = [...servicesEl.children].find((el) => el.dataset.serviceCode > code)
      servicesEl.insertBefore(service.el, after || null)
      void loadService(service, generation)
    }
    return service
  }

  async function loadService(service, run) {
    try {
      const now = Date.now()
      const data = await request(SERVICE, { serviceCode: service.code, from: new Date(now - HOUR_MS).toISOString(), sparkFrom: new Date(now - SPARK_MS).toISOString() })
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

  async function summary(run) {
    summaryAt = Date.now()
    try {
      const data = await request(SUMMARY)
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

  function failed(error) {
    if (error instanceof KeyNeeded) {
      connection('key', 'API key needed')
      say(apiKey ? 'The gateway did not accept this API key: type another above.' : 'This gateway needs an API key: type it above.', 'warn')
      keyInput.focus()
      closeSocket()
      return
    }
    say(`Could not read the gateway: ${error.message}`, 'error')
  }

  // graphql-ws's dispose() settles a promise that rejects with the CloseEvent when the socket was
  // still connecting or had just been refused (4401); nobody else awaits it, so it is caught here.
  function closeSocket() {
    if (socket) Promise.resolve(socket.dispose()).catch(() => {})
    socket = undefined
  }

  function listen(query, onEvent, run) {
    socket.subscribe(
      { query },
      {
        next: (result) => {
          if (run !== generation) return
          if (result.errors) return say(`Subscription error: ${result.errors.map((e) => e.message).join('; ')}`, 'error')
          onEvent(result.data)
          redraw()
          summarySoon()
        },
        error: (error) => {
          if (run !== generation) return
          if (error && error.code === 4401) return failed(new KeyNeeded())
          if (Array.isArray(error)) say(`Subscription error: ${error.map((e) => e.message).join('; ')}`, 'error')
        },
        complete: () => {},
      },
    )
  }

  // One row per endpoint the key may see; the panel stays hidden when there is none.
  const webhooksEl = $('webhooks')
  const webhookRows = new Map()
  async function webhooks(run) {
    let endpoints
    try {
      endpoints = (await request(WEBHOOKS)).webhookEndpoints
    } catch {
      return // the summary says what is wrong with the gateway or the key
    }
    if (run !== generation) return
    webhooksEl.hidden = endpoints.length === 0
    const body = webhooksEl.querySelector('tbody')
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
        row.querySelector('.act').append(button, said)
        webhookRows.set(endpoint.name, row)
        body.append(row)
      }
      row.querySelector('.name').textContent = endpoint.name
      const badge = document.createElement('span')
      badge.className = 'badge'
      badge.dataset.value = endpoint.state
      badge.textContent = endpoint.state
      row.querySelector('.state').replaceChildren(badge)
      row.querySelector('.pending').textContent = count(endpoint.pending)
      row.querySelector('.dead').textContent = count(endpoint.deadLetters)
      row.querySelector('.success').textContent = endpoint.lastSuccessAt ? ago(endpoint.lastSuccessAt) : '–'
      row.querySelector('.error').textContent = endpoint.lastError || ''
      row.querySelector('.act button').disabled = endpoint.deadLetters === 0
    }
  }

  // A key that may only read is told so by the gateway (FORBIDDEN); its message is shown in the row.
  async function replay(name, button, said) {
    button.disabled = true
    try {
      const data = await request(REPLAY, { endpoint: name })
      said.textContent = `${count(data.redeliverWebhooks)} put back in line`
    } catch (error) {
      said.textContent = error.message
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
      shouldRetry: (event) => !(event && event.code === 4401),
      on: {
        connected: () => run === generation && connection('live', 'live'),
        closed: (event) => run === generation && event && event.code !== 4401 && connection('down', 'reconnecting'),
      },
    })
    // Subscribed first, so no answer falls between what is read and what is pushed.
    listen(SAMPLES, (data) => serviceFor(data.metricsSampled.task.serviceCode).sample(data.metricsSampled), run)
    listen(
      CHANGES,
      (data) => {
        const task = data.taskChanged
        const service = serviceFor(task.serviceCode)
        if (service.loaded) service.upsert(task)
      },
      run,
    )
    void summary(run)
    webhookRows.clear()
    webhooksEl.querySelector('tbody').replaceChildren()
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
})()
