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

import { cellsRow, Panel, taskRows } from './dashboard.panel.js'
import { taskPageHref } from './dashboard.page.js'

const LATEST = 50
// Resolved incidents shown below the open ones.
const RESOLVED_SHOWN = 10
const SEVERITY_ORDER: Record<string, number> = { CRITICAL: 0, WARNING: 1, INFO: 2 }

interface Operations {
  DashboardViewer: { data: DashboardViewerQuery; variables: DashboardViewerQueryVariables }
  DashboardIncidents: { data: DashboardIncidentsQuery; variables: DashboardIncidentsQueryVariables }
  DashboardAcknowledge: { data: DashboardAcknowledgeMutation; variables: DashboardAcknowledgeMutationVariables }
}
type Incident = DashboardIncidentsQuery['incidents']['edges'][number]['node']

// The task rows to mark: task global id → the most severe unresolved incident's severity.
let marks = new Map<string, string>()

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
  const subject = incident.task ? `${incident.serviceCode} / ${incident.task.taskId}` : incident.serviceCode
  const state =
    incident.state === 'ACKNOWLEDGED'
      ? `acknowledged${incident.acknowledgedBy ? ` by ${incident.acknowledgedBy}` : ''}`
      : incident.state.toLowerCase()
  const tr = cellsRow([
    [incident.severity.toLowerCase(), 'severity'],
    [incident.rule, 'rule'],
    [subject, 'subject'],
    [incident.summary, 'summary'],
    [openFor(incident.openedAt, incident.resolvedAt ?? null), 'open-for'],
    [state, 'state'],
    ['', 'acknowledge'],
  ])
  // An incident about a task links to the task's page, where the samples that opened it are charted.
  if (incident.task) {
    const link = document.createElement('a')
    link.className = 'task-link'
    // The task's page marks the incident's window on its chart.
    link.href = `${taskPageHref(incident.task.id)}#incident=${encodeURIComponent(incident.id)}`
    link.textContent = subject
    tr.querySelector('td.subject')?.replaceChildren(link)
  }
  tr.dataset.incidentId = incident.id
  tr.dataset.severity = incident.severity
  tr.dataset.state = incident.state
  if (panel.canOperate && incident.state === 'OPEN') {
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
    await panel.request('DashboardAcknowledge', { id, note: null })
  } catch (error) {
    button.disabled = false
    button.title = error instanceof Error ? error.message : String(error)
  }
  void panel.refresh()
}

/** Marks the rows of tasks with an unresolved incident (`data-incident`: its severity). */
function mark() {
  for (const tr of taskRows()) {
    const severity = marks.get(tr.dataset.taskId ?? '')
    if (severity === undefined) tr.removeAttribute('data-incident')
    else if (tr.dataset.incident !== severity) tr.dataset.incident = severity
  }
}

async function rows(): Promise<HTMLTableRowElement[]> {
  const data = await panel.request('DashboardIncidents', { first: LATEST })
  const incidents = ordered(data.incidents.edges.map((edge) => edge.node))
  const next = new Map<string, string>()
  for (const incident of incidents) {
    if (incident.state === 'RESOLVED' || !incident.task) continue
    const known = next.get(incident.task.id)
    if (known === undefined || (SEVERITY_ORDER[incident.severity] ?? 9) < (SEVERITY_ORDER[known] ?? 9))
      next.set(incident.task.id, incident.severity)
  }
  marks = next
  mark()
  return incidents.map(row)
}

const panel = new Panel<Operations>({
  id: 'incidents',
  heading: 'Incidents',
  list: 'incident-list',
  columns: ['Severity', 'Rule', 'Subject', 'Summary', 'Open for', 'State', ''],
  empty: 'No incident.',
  place: 'before',
  refreshMs: 2000,
  // Every key sees the incidents it may read; one that may operate also acknowledges them.
  operatorsOnly: false,
  rows,
  // Rows come and go as the main script redraws them: each gets its mark again.
  watchTasks: { run: mark },
})
panel.start()
