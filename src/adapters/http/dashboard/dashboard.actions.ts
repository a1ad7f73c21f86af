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

import { cellsRow, Panel, taskRows } from './dashboard.panel.js'

const LATEST = 15
const KIND_WORDS: Record<string, string> = {
  STOP_TASK: 'stop',
  SEND_MESSAGE: 'message',
  ACKNOWLEDGE_INCIDENT: 'acknowledge',
  REPLAY_WEBHOOKS: 'replay webhooks',
  ENABLE_WEBHOOK_ENDPOINT: 'endpoint on',
  DISABLE_WEBHOOK_ENDPOINT: 'endpoint off',
}

/** What each operation this script sends answers, and the variables it takes. */
interface Operations {
  DashboardViewer: { data: DashboardViewerQuery; variables: DashboardViewerQueryVariables }
  DashboardActions: { data: DashboardActionsQuery; variables: DashboardActionsQueryVariables }
  DashboardStop: { data: DashboardStopMutation; variables: DashboardStopMutationVariables }
}

/** What a row shows of the stop asked for from this page. */
interface Asked {
  state: string
  message: string | null
}

let decoratePending = false
// The stops asked for from this page, by task global id: what their row shows.
const requested = new Map<string, Asked>()

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
  if (!panel.canOperate || (!live && !asked)) return box?.remove()
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
    const data = await panel.request('DashboardStop', { id, reason: reason || null, key: pressKey() })
    // Null only beside an error, which request() throws; the fallback keeps the row honest anyway.
    requested.set(id, data.stopTask?.action ?? { state: 'FAILED', message: 'livegate gave no action.' })
  } catch (error) {
    requested.set(id, { state: 'FAILED', message: error instanceof Error ? error.message : String(error) })
  }
  box.dataset.mode = 'button'
  decorateRow(tr)
  void panel.refresh()
}

function decorate() {
  decoratePending = false
  for (const tr of taskRows()) decorateRow(tr)
}

function decorateSoon() {
  if (decoratePending) return
  decoratePending = true
  requestAnimationFrame(decorate)
}

const when = (iso: string) => new Date(iso).toLocaleTimeString()

async function rows(): Promise<HTMLTableRowElement[]> {
  const data = await panel.request('DashboardActions', { first: LATEST })
  return data.actions.edges.map(({ node }) => {
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
    const tr = cellsRow([
      [when(node.requestedAt), 'when'],
      [KIND_WORDS[node.kind] ?? node.kind.toLowerCase().replaceAll('_', ' '), 'kind'],
      [target, 'target'],
      [node.requestedBy || 'local user', 'by'],
      [node.reason || '', 'reason'],
      [node.state.toLowerCase(), 'state'],
      [cloud, 'cloud'],
    ])
    tr.dataset.actionId = node.id
    const state = tr.querySelector<HTMLElement>('.state')
    if (state) state.dataset.value = node.state
    return tr
  })
}

const panel = new Panel<Operations>({
  id: 'actions',
  heading: 'Latest actions',
  list: 'action-list',
  columns: ['When', 'Action', 'Target', 'By', 'Reason', 'State', 'Cloud'],
  empty: 'No action yet.',
  place: 'after',
  refreshMs: 5000,
  operatorsOnly: true,
  rows,
  // A new key forgets this tab's presses; the rows show what it may do.
  onPermission: () => {
    requested.clear()
    decorate()
  },
  // Rows come and go, and end (their class), as the main script redraws them.
  watchTasks: { run: decorateSoon, attributes: ['class', 'data-stop-state'] },
})
panel.start()
