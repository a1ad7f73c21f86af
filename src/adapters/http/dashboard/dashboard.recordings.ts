// The dashboard's recordings (docs/archive.md): the newest recordings of the catalogue with their
// play links, views and where each was seen (a file only the archive lists was never announced
// by a type 2: flagged), and the tasks whose recording is missing (`recording.missing`). Loaded
// after dashboard.js, beside the incidents panel; its operation is schema/operations.graphql's,
// typed by codegen.
import type * as Operations from '../../../../schema/client/operations.js'
import { ACCESS_CHANGED, authorization } from './dashboard.page.js'

const NEWEST = 20
const OPERATION = 'DashboardRecordings'
const REFRESH_MS = 5000
const endpoint = new URL('graphql', window.location.href)
const operationsText = document.getElementById('dashboard-operations')?.textContent ?? '{}'
const operationTexts = JSON.parse(operationsText) as Record<string, string>

type Answer = Operations.DashboardRecordingsQuery
type Variables = Operations.DashboardRecordingsQueryVariables
type Recording = Answer['recordings']['edges'][number]['node']
type Missing = Answer['missingRecordings'][number]

const servicesEl = document.getElementById('services')
const panel = document.createElement('section')
panel.id = 'recordings'
panel.className = 'recordings'
panel.innerHTML =
  '<h2>Recordings</h2><table class="recording-list"><thead><tr><th>File</th><th>Service / task</th><th>User</th>' +
  '<th>Views</th><th>Seen in</th><th>Recorded</th></tr></thead><tbody></tbody></table>' +
  '<p class="no-recordings">No recording yet.</p>' +
  '<h3>Missing</h3><ul class="missing-list"></ul><p class="no-missing">No recording is missing.</p>'
servicesEl?.before(panel)
const body = panel.querySelector('tbody') as HTMLTableSectionElement
const none = panel.querySelector('.no-recordings') as HTMLElement
const missingList = panel.querySelector('.missing-list') as HTMLUListElement
const noMissing = panel.querySelector('.no-missing') as HTMLElement
let timer: ReturnType<typeof setTimeout> | undefined
let generation = 0

async function load(): Promise<Answer> {
  const variables: Variables = { first: NEWEST }
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...authorization() },
    body: JSON.stringify({ query: operationTexts[OPERATION] ?? '', operationName: OPERATION, variables }),
  })
  const answer: { data?: Answer | null; errors?: unknown[] } = await response.json().catch(() => ({}))
  if (answer.errors?.length || !answer.data) throw new Error(`the gateway answered ${response.status}`)
  return answer.data
}

function cell(tr: HTMLTableRowElement, className: string, content: string | Node): void {
  const td = document.createElement('td')
  td.className = className
  td.append(content)
  tr.append(td)
}

function row(recording: Recording): HTMLTableRowElement {
  const tr = document.createElement('tr')
  tr.dataset.recordingId = recording.id
  // Listed by the archive, never announced by a type 2: the cloud forgot its callback.
  const unannounced = !recording.seenIn.includes('CALLBACK')
  if (unannounced) tr.dataset.unannounced = 'true'
  let file: string | Node = recording.fileName
  if (recording.playUrl) {
    const link = document.createElement('a')
    link.href = recording.playUrl
    link.textContent = recording.fileName
    link.target = '_blank'
    link.rel = 'noopener'
    file = link
  }
  cell(tr, 'file', file)
  cell(tr, 'subject', recording.task ? `${recording.serviceCode} / ${recording.task.taskId}` : recording.serviceCode)
  cell(tr, 'user', recording.userName ?? '')
  cell(tr, 'views', recording.views === null || recording.views === undefined ? '' : String(recording.views))
  const seen = recording.seenIn.map((source) => (source === 'CALLBACK' ? 'callback' : 'archive list')).join(' + ')
  cell(tr, 'seen-in', unannounced ? `${seen} (never announced)` : seen)
  cell(tr, 'recorded', new Date(recording.createdAt ?? recording.firstSeenAt).toLocaleString())
  return tr
}

function missingItem(missing: Missing): HTMLLIElement {
  const li = document.createElement('li')
  li.dataset.taskId = missing.task.id
  const who = missing.task.userName ? ` (${missing.task.userName})` : ''
  const told = new Date(missing.toldAt).toLocaleTimeString()
  li.textContent = `${missing.task.serviceCode} / ${missing.task.taskId}${who}: no recording, told ${told}`
  return li
}

async function refresh() {
  clearTimeout(timer)
  const run = generation
  try {
    const data = await load()
    if (run !== generation) return
    const recordings = data.recordings.edges.map((edge) => edge.node)
    body.replaceChildren(...recordings.map(row))
    none.hidden = recordings.length > 0
    missingList.replaceChildren(...data.missingRecordings.map(missingItem))
    noMissing.hidden = data.missingRecordings.length > 0
  } catch {
    // The main view reports what the gateway says; the panel waits for the next look.
  }
  if (run === generation) timer = setTimeout(() => void refresh(), REFRESH_MS)
}

const again = () => {
  generation++
  void refresh()
}
document.getElementById('key-form')?.addEventListener('submit', again)
document.getElementById('forget-key')?.addEventListener('click', again)
window.addEventListener(ACCESS_CHANGED, again)
void refresh()
