// The dashboard's webhook deliveries panel (with endpoints configured): each endpoint's state,
// pending deliveries and dead letters, and its Replay button. Read by dashboard.js on opening, on
// a new key or sign-in, and every five seconds; a caller that may not read them sees no panel.
import type { DashboardWebhooksQuery } from '../../../../schema/client/operations.js'
import { $, ago, count, request, within } from './dashboard.page.js'

// One row per endpoint the key may see; the panel stays hidden when there is none.
const webhooksEl = $('webhooks')
const webhookRows = new Map<string, HTMLTableRowElement>()
/** Reads the endpoints again; `current` says whether the page still wants this answer. */
export async function webhooks(current: () => boolean) {
  let endpoints: DashboardWebhooksQuery['webhookEndpoints']
  try {
    endpoints = (await request('DashboardWebhooks', {})).webhookEndpoints
  } catch {
    return // the summary says what is wrong with the gateway or the key
  }
  if (!current()) return
  webhooksEl.hidden = endpoints.length === 0
  const body = within(webhooksEl, 'tbody')
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
      within(row, '.act').append(button, said)
      webhookRows.set(endpoint.name, row)
      body.append(row)
    }
    within(row, '.name').textContent = endpoint.name
    const badge = document.createElement('span')
    badge.className = 'badge'
    badge.dataset.value = endpoint.state
    badge.textContent = endpoint.state
    within(row, '.state').replaceChildren(badge)
    within(row, '.pending').textContent = count(endpoint.pending)
    within(row, '.dead').textContent = count(endpoint.deadLetters)
    within(row, '.success').textContent = endpoint.lastSuccessAt ? ago(endpoint.lastSuccessAt) : '–'
    within(row, '.error').textContent = endpoint.lastError || ''
    within<HTMLButtonElement>(row, '.act button').disabled = endpoint.deadLetters === 0
  }
}

// A key that may only read is told so by the gateway (FORBIDDEN); its message is shown in the row.
async function replay(name: string, button: HTMLButtonElement, said: HTMLElement) {
  button.disabled = true
  try {
    const data = await request('DashboardReplay', { endpoint: name })
    said.textContent = `${count(data.redeliverWebhooks)} put back in line`
  } catch (error) {
    said.textContent = error instanceof Error ? error.message : String(error)
  }
  void webhooks(() => true)
}

/** Forgets the rows of another key (or user). */
export function clearWebhooks(): void {
  webhookRows.clear()
  within(webhooksEl, 'tbody').replaceChildren()
}
