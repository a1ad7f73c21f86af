// The dashboard's actions, for an API key that may operate (`"can": ["operate"]`): a Stop button on
// each live task's row (a reason, a confirmation, then the request's state) and the latest actions.
// A read-only key sees neither: the page asks `viewer { canOperate }` with the key the tab keeps.
// Loaded after dashboard.js, whose rows it decorates without reaching into its code. Compiled from
// TypeScript like it; its operations are schema/operations.graphql's, typed by codegen.
import type {
  DashboardActionsQuery,
  DashboardActionsQueryVariables,
  DashboardStopMutation,
  DashboardStopMutationVariables,
  DashboardViewerQuery,
  DashboardViewerQueryVariables,
} from '../../../../schema/client/operations.js'

const KEY_STORAGE = 'livegate.dashboard.apiKey'
const LATEST = 15
const KIND_WORDS: Record<string, string> = {
  STOP_TASK: 'stop',
  SEND_MESSAGE: 'message',
  ACKNOWLEDGE_INCIDENT: 'acknowledge',
  REPLAY_WEBHOOKS: 'replay webhooks',
  ENABLE_WEBHOOK_ENDPOINT: 'endpoint on',
  DISABLE_WEBHOOK_ENDPOINT: 'endpoint off',
}
const REFRESH_MS = 5000
const endpoint = new URL('graphql', window.location.href)

/** What each operation this script sends answers, and the variables it takes. */
interface Operations {
  DashboardViewer: { data: DashboardViewerQuery; variables: DashboardViewerQueryVariables }
  DashboardActions: { data: DashboardActionsQuery; variables: DashboardActionsQueryVariables }
  DashboardStop: { data: DashboardStopMutation; variables: DashboardStopMutationVariables }
}

// As the page carries them (dashboard.plugin.ts), from schema/operations.graphql.
const operationTexts = JSON.parse(document.getElementById('dashboard-operations')?.textContent ?? '{}') as Record<
  string,
  string
>

function $(id: string): HTMLElement {
  const element = document.getElementById(id)
  if (!element) throw new Error(`the page has no #${id}`)
  return element
}
function within<T extends Element = HTMLElement>(root: ParentNode, selector: string): T {
  const element = root.querySelector(selector)
  if (!element) throw new Error(`no ${selector} in the actions panel`)
  return element as T
}

const servicesEl = $('services')
const panel = document.createElement('section')
panel.id = 'actions'
panel.className = 'actions'
panel.hidden = true
panel.innerHTML =
  '<h2>Latest actions</h2><table class="action-list"><thead><tr>' +
  '<th>When</th><th>Action</th><th>Target</th><th>By</th><th>Reason</th><th>State</th><th>Cloud</th>' +
  '</tr></thead><tbody></tbody></table>' +
  '<p class="no-actions">No action yet.</p>'
servicesEl.after(panel)

/** What a row shows of the stop asked for from this page. */
interface Asked {
  state: string
  message: string | null
}

let canOperate = false
let generation = 0
let refreshTimer: ReturnType<typeof setTimeout> | undefined
let decoratePending = false
// The stops asked for from this page, by task global id: what their row shows.
const requested = new Map<string, Asked>()

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
  const errors = answer.errors || []
  if (errors.length > 0) throw new Error(errors.map((error) => error.message).join('; '))
  if (!answer.data) throw new Error(`the gateway answered ${response.status}`)
  return answer.data
}

// An idempotency key per press: the same stop sent again (a retry) is one action.
const pressKey = () =>
  typeof crypto.randomUUID === 'function' ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(36).slice(2)}`

/** What a row shows of its stop: the button, the form, or the request's state. */
function decorateRow(tr: HTMLTableRowElement) {
  const cell = tr.querySelector('td.open')
  if (!cell) return
  let box = cell.querySelector<HTMLElement>('.stop-box')
  const live = !tr.classList.contains('ended')
  const id = tr.dataset.taskId ?? ''
  // This tab's own press first (it knows a refusal's message), else the stop the task's data holds.
  const asked = requested.get(id) ?? (tr.dataset.stopState ? { state: tr.dataset.stopState, message: null } : undefined)
  if (!canOperate || (!live && !asked)) return box?.remove()
  if (!box) {
    box = document.createElement('div')
    box.className = 'stop-box'
    cell.append(box)
  }
  const shownBox = box
  const shown = asked ? `asked:${asked.state}:${live}` : box.dataset.mode || 'button'
  if (box.dataset.shown === shown) return
  box.dataset.shown = shown
  box.replaceChildren()
  if (asked) {
    const state = document.createElement('span')
    state.className = 'badge stop-state'
    state.dataset.value = asked.state
    state.textContent =
      asked.state === 'SUCCEEDED'
        ? live
          ? 'stop sent, ending…'
          : 'stopped'
        : `stop ${asked.state.toLowerCase()}${asked.message ? `: ${asked.message}` : ''}`
    box.append(state)
  } else if (shown === 'form') {
    const reason = document.createElement('input')
    reason.className = 'stop-reason'
    reason.placeholder = 'reason'
    reason.maxLength = 1000
    const confirm = button('Confirm stop', 'stop-confirm', () => void stop(tr, shownBox, reason.value.trim()))
    const cancel = button('Cancel', 'stop-cancel', () => {
      shownBox.dataset.mode = 'button'
      decorateRow(tr)
    })
    box.append(reason, confirm, cancel)
    reason.focus()
  } else {
    box.append(
      button('Stop', 'stop', () => {
        shownBox.dataset.mode = 'form'
        decorateRow(tr)
      }),
    )
  }
}

function button(text: string, className: string, onClick: () => void): HTMLButtonElement {
  const element = document.createElement('button')
  element.type = 'button'
  element.className = className
  element.textContent = text
  element.addEventListener('click', onClick)
  return element
}

async function stop(tr: HTMLTableRowElement, box: HTMLElement, reason: string) {
  const id = tr.dataset.taskId ?? ''
  requested.set(id, { state: 'PENDING', message: null })
  decorateRow(tr)
  try {
    const data = await request('DashboardStop', { id, reason: reason || null, key: pressKey() })
    // Null only beside an error, which request() throws; the fallback keeps the row honest anyway.
    requested.set(id, data.stopTask?.action ?? { state: 'FAILED', message: 'livegate gave no action.' })
  } catch (error) {
    requested.set(id, { state: 'FAILED', message: error instanceof Error ? error.message : String(error) })
  }
  box.dataset.mode = 'button'
  decorateRow(tr)
  void refresh()
}

function decorate() {
  decoratePending = false
  for (const tr of servicesEl.querySelectorAll<HTMLTableRowElement>('table.tasks tbody tr[data-task-id]'))
    decorateRow(tr)
}

function decorateSoon() {
  if (decoratePending) return
  decoratePending = true
  requestAnimationFrame(decorate)
}

const when = (iso: string) => new Date(iso).toLocaleTimeString()

async function refresh() {
  clearTimeout(refreshTimer)
  const run = generation
  try {
    const data = await request('DashboardActions', { first: LATEST })
    if (run !== generation || !canOperate) return
    const rows = data.actions.edges.map(({ node }) => {
      const tr = document.createElement('tr')
      tr.dataset.actionId = node.id
      // A webhook action acts on an endpoint (its service code `*` when it serves several), not a task.
      const target = node.endpoint
        ? `webhook ${node.endpoint}`
        : node.kind === 'SEND_MESSAGE'
          ? `${node.serviceCode} / ${node.userName}`
          : node.taskId
            ? `${node.serviceCode} / ${node.taskId}`
            : node.serviceCode
      const cloud = node.refusal
        ? `refused: ${node.refusal}`
        : node.ret === null
          ? node.message || ''
          : `ret ${node.ret}${node.message ? `: ${node.message}` : ''}`
      const cells: Array<[string, string]> = [
        [when(node.requestedAt), 'when'],
        [KIND_WORDS[node.kind] ?? node.kind.toLowerCase().replaceAll('_', ' '), 'kind'],
        [target, 'target'],
        [node.requestedBy || 'local user', 'by'],
        [node.reason || '', 'reason'],
        [node.state.toLowerCase(), 'state'],
        [cloud, 'cloud'],
      ]
      for (const [text, className] of cells) {
        const td = document.createElement('td')
        td.className = className
        td.textContent = text
        tr.append(td)
      }
      within(tr, '.state').dataset.value = node.state
      return tr
    })
    within(panel, 'tbody').replaceChildren(...rows)
    within(panel, '.no-actions').hidden = rows.length > 0
  } catch {
    // The main view reports what the gateway says; the list waits for the next refresh.
  }
  if (run === generation && canOperate) refreshTimer = setTimeout(() => void refresh(), REFRESH_MS)
}

/** Asks what the tab's key may do, and shows or hides the actions. */
async function check() {
  const run = ++generation
  canOperate = false
  clearTimeout(refreshTimer)
  panel.hidden = true
  requested.clear()
  decorate()
  try {
    const data = await request('DashboardViewer', {})
    if (run !== generation) return
    canOperate = data.viewer.canOperate === true
  } catch {
    // No key yet, or a refused one: nothing to offer.
    return
  }
  document.body.dataset.canOperate = String(canOperate)
  if (!canOperate) return
  panel.hidden = false
  decorate()
  void refresh()
}

// Rows come and go, and end (their class), as the main script redraws them.
new MutationObserver(decorateSoon).observe(servicesEl, {
  childList: true,
  subtree: true,
  attributes: true,
  attributeFilter: ['class', 'data-stop-state'],
})
// A new key (or none): dashboard.js keeps it first, its listeners being registered earlier.
$('key-form').addEventListener('submit', () => void check())
$('forget-key').addEventListener('click', () => void check())
void check()
