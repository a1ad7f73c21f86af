// The dashboard's incidents (docs/alerts.md): open ones first, coloured by severity, with how long
// each has been open and its summary; an Acknowledge button for a key that may operate; a mark on
// the rows of the tasks they are about. Loaded after dashboard.js, whose rows it marks without
// reaching into its code, as dashboard.actions.js decorates them. Its operations are
// schema/operations.graphql's, typed by codegen.
import type {
  DashboardAcknowledgeMutation,
  DashboardAcknowledgeMutationVariables,
  DashboardIncidentsQuery,
  DashboardIncidentsQueryVariables,
  DashboardViewerQuery,
  DashboardViewerQueryVariables,
} from '../../../../schema/client/operations.js'

const KEY_STORAGE = 'livegate.dashboard.apiKey'
const LATEST = 50
// Resolved incidents shown below the open ones.
const RESOLVED_SHOWN = 10
const REFRESH_MS = 2000
const SEVERITY_ORDER: Record<string, number> = { CRITICAL: 0, WARNING: 1, INFO: 2 }
const endpoint = new URL('graphql', window.location.href)

interface Operations {
  DashboardViewer: { data: DashboardViewerQuery; variables: DashboardViewerQueryVariables }
  DashboardIncidents: { data: DashboardIncidentsQuery; variables: DashboardIncidentsQueryVariables }
  DashboardAcknowledge: { data: DashboardAcknowledgeMutation; variables: DashboardAcknowledgeMutationVariables }
}
type Incident = DashboardIncidentsQuery['incidents']['edges'][number]['node']

const operationTexts = JSON.parse(document.getElementById('dashboard-operations')?.textContent ?? '{}') as Record<
  string,
  string
>

function $(id: string): HTMLElement {
  const element = document.getElementById(id)
  if (!element) throw new Error(`the page has no #${id}`)
  return element
}

const servicesEl = $('services')
const panel = document.createElement('section')
panel.id = 'incidents'
panel.className = 'incidents'
panel.innerHTML =
  '<h2>Incidents</h2><table class="incident-list"><thead><tr>' +
  '<th>Severity</th><th>Rule</th><th>Subject</th><th>Summary</th>' +
  '<th>Open for</th><th>State</th><th></th></tr></thead><tbody></tbody></table><p class="no-incidents">No incident.</p>'
servicesEl.before(panel)
const body = panel.querySelector('tbody') as HTMLTableSectionElement
const none = panel.querySelector('.no-incidents') as HTMLElement

let canOperate = false
let generation = 0
let timer: ReturnType<typeof setTimeout> | undefined
// The task rows to mark: task global id → the most severe unresolved incident's severity.
let marks = new Map<string, string>()

const authorization = (): Record<string, string> => {
  const key = sessionStorage.getItem(KEY_STORAGE)
  return key ? { authorization: `Bearer ${key}` } : {}
}

async function request<N extends keyof Operations>(
  operationName: N,
  variables: Operations[N]['variables'],
): Promise<Operations[N]['data']> {
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json, application/json',
      ...authorization(),
    },
    body: JSON.stringify({ query: operationTexts[operationName] ?? '', operationName, variables }),
  })
  const answer = (await response.json().catch(() => ({}))) as {
    data?: Operations[N]['data'] | null
    errors?: Array<{ message: string }>
  }
  if (answer.errors?.length) throw new Error(answer.errors.map((error) => error.message).join('; '))
  if (!answer.data) throw new Error(`the gateway answered ${response.status}`)
  return answer.data
}

/** How long since a time, as a person reads it: "45 s", "12 min", "3 h 5 min". */
function openFor(iso: string, until: string | null): string {
  const seconds = Math.max(0, Math.round(((until ? Date.parse(until) : Date.now()) - Date.parse(iso)) / 1000))
  if (seconds < 120) return `${seconds} s`
  const minutes = Math.round(seconds / 60)
  return minutes < 120 ? `${minutes} min` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`
}

// Open and acknowledged first, the most severe and then the longest open on top; then the latest resolved.
function ordered(incidents: Incident[]): Incident[] {
  const unresolved = incidents.filter((incident) => incident.state !== 'RESOLVED')
  unresolved.sort(
    (a, b) =>
      (SEVERITY_ORDER[a.severity] ?? 9) - (SEVERITY_ORDER[b.severity] ?? 9) ||
      Date.parse(a.openedAt) - Date.parse(b.openedAt),
  )
  return [...unresolved, ...incidents.filter((incident) => incident.state === 'RESOLVED').slice(0, RESOLVED_SHOWN)]
}

function row(incident: Incident): HTMLTableRowElement {
  const tr = document.createElement('tr')
  tr.dataset.incidentId = incident.id
  tr.dataset.severity = incident.severity
  tr.dataset.state = incident.state
  const subject = incident.task ? `${incident.serviceCode} / ${incident.task.taskId}` : incident.serviceCode
  const state =
    incident.state === 'ACKNOWLEDGED'
      ? `acknowledged${incident.acknowledgedBy ? ` by ${incident.acknowledgedBy}` : ''}`
      : incident.state.toLowerCase()
  const cells: Array<[string, string]> = [
    [incident.severity.toLowerCase(), 'severity'],
    [incident.rule, 'rule'],
    [subject, 'subject'],
    [incident.summary, 'summary'],
    [openFor(incident.openedAt, incident.resolvedAt ?? null), 'open-for'],
    [state, 'state'],
    ['', 'acknowledge'],
  ]
  for (const [text, className] of cells) {
    const td = document.createElement('td')
    td.className = className
    td.textContent = text
    tr.append(td)
  }
  if (canOperate && incident.state === 'OPEN') {
    const button = document.createElement('button')
    button.type = 'button'
    button.className = 'acknowledge'
    button.textContent = 'Acknowledge'
    button.addEventListener('click', () => void acknowledge(incident.id, button))
    tr.querySelector('td.acknowledge')?.append(button)
  }
  return tr
}

async function acknowledge(id: string, button: HTMLButtonElement) {
  button.disabled = true
  try {
    await request('DashboardAcknowledge', { id, note: null })
  } catch (error) {
    button.disabled = false
    button.title = error instanceof Error ? error.message : String(error)
  }
  void refresh()
}

/** Marks the rows of tasks with an unresolved incident (`data-incident`: its severity). */
function mark() {
  for (const tr of servicesEl.querySelectorAll<HTMLTableRowElement>('table.tasks tbody tr[data-task-id]')) {
    const severity = marks.get(tr.dataset.taskId ?? '')
    if (severity === undefined) tr.removeAttribute('data-incident')
    else if (tr.dataset.incident !== severity) tr.dataset.incident = severity
  }
}

async function refresh() {
  clearTimeout(timer)
  const run = generation
  try {
    const data = await request('DashboardIncidents', { first: LATEST })
    if (run !== generation) return
    const incidents = ordered(data.incidents.edges.map((edge) => edge.node))
    body.replaceChildren(...incidents.map(row))
    none.hidden = incidents.length > 0
    const next = new Map<string, string>()
    for (const incident of incidents) {
      if (incident.state === 'RESOLVED' || !incident.task) continue
      const known = next.get(incident.task.id)
      if (known === undefined || (SEVERITY_ORDER[incident.severity] ?? 9) < (SEVERITY_ORDER[known] ?? 9))
        next.set(incident.task.id, incident.severity)
    }
    marks = next
    mark()
  } catch {
    // The main view reports what the gateway says; the panel waits for the next look.
  }
  if (run === generation) timer = setTimeout(() => void refresh(), REFRESH_MS)
}

/** Asks what the tab's key may do, then shows the incidents it may read. */
async function check() {
  const run = ++generation
  canOperate = false
  try {
    canOperate = (await request('DashboardViewer', {})).viewer.canOperate === true
  } catch {
    // No key yet, or a refused one: the panel shows what the gateway lets it read.
  }
  if (run === generation) void refresh()
}

// Rows come and go as the main script redraws them: each gets its mark again.
new MutationObserver(mark).observe(servicesEl, { childList: true, subtree: true })
$('key-form').addEventListener('submit', () => void check())
$('forget-key').addEventListener('click', () => void check())
void check()
