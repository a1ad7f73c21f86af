// The dashboard page's own script, compiled from TypeScript into an ES module the page loads
// (src/adapters/http/pages.tsconfig.json). uPlot and graphql-ws are the prebuilt browser builds the
// page loads before it, both served by livegate (dashboard.globals.d.ts). The operations it sends
// are schema/operations.graphql's `Dashboard…`, validated against the schema by the docs test and
// typed by codegen (schema/client/operations.ts); the page carries their text (dashboard.plugin.ts).
import {
  $,
  HOUR_MS,
  SPARK_MS,
  LIVE_ROWS,
  ENDED_ROWS,
  SUMMARY_EVERY_MS,
  socketUrl,
  type Operations,
  operationText,
  keyInput,
  forgetButton,
  authorization,
  KeyNeeded,
  request,
  say,
  connection,
  currentKey,
  useKey,
  ACCESS_CHANGED,
  currentToken,
} from './dashboard.page.js'
import { Service } from './dashboard.service.js'
import { clearWebhooks, webhooks } from './dashboard.webhooks.js'

const servicesEl = $('services')
const services = new Map<string, Service>()
let socket: ReturnType<typeof graphqlWs.createClient> | undefined
let generation = 0
let drawPending = false
let summaryTimer: ReturnType<typeof setTimeout> | undefined
let summaryAt = 0
// Who is asking, once per start: a broadcaster (a user scope) may not read service-wide figures,
// so their view is their own tasks, by the service codes of their token or key.
let viewer: Promise<Operations['DashboardViewer']['data']['viewer'] | undefined> = Promise.resolve(undefined)

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
    if ((await viewer)?.userName) {
      const sparkFrom = new Date(now - SPARK_MS).toISOString()
      const variables = { serviceCode: service.code, sparkFrom, liveRows: LIVE_ROWS, endedRows: ENDED_ROWS }
      const own = await request('DashboardOwnTasks', variables)
      if (run === generation)
        service.load(
          [],
          [...own.live.edges, ...own.ended.edges].map((edge) => edge.node),
        )
      return
    }
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
    const own = await viewer
    if (own?.userName) {
      for (const code of own.serviceCodes ?? []) serviceFor(code)
      return say(`Signed in as ${own.name || own.subject}: your own tasks (${own.userName}).`)
    }
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
    say(
      currentToken()
        ? 'The gateway did not accept your sign-in: sign in again.'
        : currentKey()
          ? 'The gateway did not accept this API key: type another above.'
          : 'This gateway needs an API key (or a sign-in): type it above.',
      'warn',
    )
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

function listen<N extends 'DashboardSamples' | 'DashboardChanges'>(
  operationName: N,
  onEvent: (data: Operations[N]['data']) => void,
  run: number,
) {
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
        if (Array.isArray(error))
          say(`Subscription error: ${error.map((e: { message: string }) => e.message).join('; ')}`, 'error')
      },
      complete: () => {},
    },
  )
}

/** Everything read afresh: on opening the page and after a new key. */
function start() {
  generation += 1
  const run = generation
  closeSocket()
  services.clear()
  servicesEl.replaceChildren()
  forgetButton.hidden = !currentKey()
  keyInput.value = ''
  keyInput.placeholder = currentKey() ? 'kept for this tab' : 'none needed without keys'
  say('Loading…')
  connection('connecting', 'connecting')
  viewer = request('DashboardViewer', {}).then(
    (data) => data.viewer,
    () => undefined,
  )
  // One socket for both subscriptions; it reconnects for as long as the page is open, except
  // when the key is refused (4401).
  socket = graphqlWs.createClient({
    url: socketUrl.href,
    connectionParams: () => authorization(),
    retryAttempts: Infinity,
    shouldRetry: (event) => closeCode(event) !== 4401,
    on: {
      connected: () => void (run === generation && connection('live', 'live')),
      closed: (event) =>
        void (run === generation && event && closeCode(event) !== 4401 && connection('down', 'reconnecting')),
    },
  })
  // Subscribed first, so no answer falls between what is read and what is pushed.
  listen(
    'DashboardSamples',
    (data) => serviceFor(data.metricsSampled.task.serviceCode).sample(data.metricsSampled),
    run,
  )
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
  clearWebhooks()
  void webhooks(() => run === generation)
}

// Never submitted: the policy allows no form action, and a GET would put the key in the address.
$('key-form').addEventListener('submit', (event) => {
  event.preventDefault()
  const typed = keyInput.value.trim()
  if (!typed) return
  useKey(typed)
  start()
})
// Signed in, renewed or signed out (signin/signin.client.ts): read everything as the new caller.
window.addEventListener(ACCESS_CHANGED, () => start())
forgetButton.addEventListener('click', () => {
  useKey('')
  start()
})
// The window slides and "answered … ago" counts on even when no sample comes.
setInterval(() => {
  for (const service of services.values()) {
    service.freshness()
    for (const row of service.rows.values()) row.dirty = true
  }
  redraw()
  const run = generation
  void webhooks(() => run === generation)
}, 5000)

start()
