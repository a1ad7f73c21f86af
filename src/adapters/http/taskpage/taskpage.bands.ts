// The incidents of the task page's chart: each incident a band over the plot from its opening to its
// resolution (or now, while open), and the one an incident's link names (#incident=<id>, from the
// dashboard's incidents or the timeline) marked, with its window said below the chart: the samples
// that opened it are the chart's points under the band.
import { $, type Operations } from '../dashboard/dashboard.page.js'

export type BandIncident = NonNullable<Operations['DashboardTask']['data']['task']>['incidents'][number]

let incidents: BandIncident[] = []

/** The incident the page's address names, if any: `#incident=<id>`. */
export function markedIncident(): string | null {
  return new URLSearchParams(window.location.hash.slice(1)).get('incident')
}

/** The address of an incident's window on a task page (relative: the page's own address). */
export const incidentHref = (id: string) => `#incident=${encodeURIComponent(id)}`

const clock = (at: string) => new Date(at).toLocaleTimeString()

// An incident's window in seconds, as the chart's x scale counts.
function windowOf(incident: BandIncident): [number, number] {
  const end = incident.resolvedAt ? Date.parse(incident.resolvedAt) : Date.now()
  return [Date.parse(incident.openedAt) / 1000, end / 1000]
}

/** The task's incidents, as the last read of it answered. */
export function setIncidents(read: BandIncident[]): void {
  incidents = read
  sayMarked()
}

/** The x range the chart needs so that every incident's window is on it. */
export function bandsRange([start, end]: [number, number]): [number, number] {
  const windows = incidents.map(windowOf)
  return [Math.min(start, ...windows.map(([from]) => from)), Math.max(end, ...windows.map(([, to]) => to))]
}

/** Under the chart, in words: the marked incident's window, or that the address names none of this task's. */
function sayMarked(): void {
  const marked = markedIncident()
  const line = $('task-incident')
  const incident = incidents.find((one) => one.id === marked)
  line.hidden = marked === null
  line.dataset.incidentId = incident?.id ?? ''
  line.textContent = !incident
    ? 'The incident this address names is not one of this task’s.'
    : `Marked: ${incident.severity.toLowerCase()} incident ${incident.rule}, ${incident.summary}: opened ` +
      `${clock(incident.openedAt)}, ${incident.resolvedAt ? `resolved ${clock(incident.resolvedAt)}` : 'open now'}.`
}

/** uPlot's draw hook: a box per incident over the plot, placed by the chart's own x scale. */
export function drawBands(u: uPlot): void {
  for (const old of u.over.querySelectorAll('.incident-band')) old.remove()
  const marked = markedIncident()
  for (const incident of incidents) {
    const [from, to] = windowOf(incident)
    const left = u.valToPos(from, 'x')
    const band = document.createElement('div')
    band.className = 'incident-band'
    band.dataset.incidentId = incident.id
    band.dataset.severity = incident.severity
    band.dataset.state = incident.state
    if (incident.id === marked) band.dataset.marked = 'yes'
    band.style.left = `${left}px`
    band.style.width = `${Math.max(2, u.valToPos(to, 'x') - left)}px`
    u.over.append(band)
  }
  $('task-chart').dataset.incidents = String(incidents.length)
}

/** Follows the address as it changes: the marked band and its words. */
export function followMarked(redraw: () => void): void {
  window.addEventListener('hashchange', () => {
    sayMarked()
    redraw()
  })
}
