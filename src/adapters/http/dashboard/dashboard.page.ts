// What the dashboard's modules share: the page's elements, formats, the API key, and requests
// to the gateway with the operations the page carries (dashboard.plugin.ts).
import type {
  DashboardChangesSubscription,
  DashboardReplayMutation,
  DashboardReplayMutationVariables,
  DashboardSamplesSubscription,
  DashboardServiceQuery,
  DashboardServiceQueryVariables,
  DashboardSummaryQuery,
  DashboardSummaryQueryVariables,
  DashboardOwnTasksQuery,
  DashboardOwnTasksQueryVariables,
  DashboardTaskFieldsFragment,
  DashboardTaskQuery,
  DashboardTaskQueryVariables,
  DashboardTimelineLiveSubscription,
  DashboardTimelineLiveSubscriptionVariables,
  DashboardTimelineQuery,
  DashboardTimelineQueryVariables,
  DashboardViewerQuery,
  DashboardWebhooksQuery,
  DashboardWebhooksQueryVariables,
} from '../../../../schema/client/operations.js'

const KEY_STORAGE = 'livegate.dashboard.apiKey'
export const HOUR_MS = 3600_000
// The sparkline's window: long enough to show a trend, short enough to stay a handful of points.
export const SPARK_MS = 10 * 60_000
export const LIVE_ROWS = 100
export const ENDED_ROWS = 20
// Counts and freshness are read again at most this often while events arrive.
export const SUMMARY_EVERY_MS = 3000

// Relative to this script (served at dashboard/…), so a reverse proxy's path prefix is kept and the
// task pages below dashboard/task/ reach the same endpoint.
export const endpoint = new URL('../graphql', import.meta.url)
export const socketUrl = new URL(endpoint)
socketUrl.protocol = endpoint.protocol === 'https:' ? 'wss:' : 'ws:'

/** What each operation this script sends answers, and the variables it takes. */
export interface Operations {
  DashboardSummary: { data: DashboardSummaryQuery; variables: DashboardSummaryQueryVariables }
  DashboardService: { data: DashboardServiceQuery; variables: DashboardServiceQueryVariables }
  DashboardOwnTasks: { data: DashboardOwnTasksQuery; variables: DashboardOwnTasksQueryVariables }
  DashboardViewer: { data: DashboardViewerQuery; variables: Record<string, never> }
  DashboardWebhooks: { data: DashboardWebhooksQuery; variables: DashboardWebhooksQueryVariables }
  DashboardReplay: { data: DashboardReplayMutation; variables: DashboardReplayMutationVariables }
  DashboardSamples: { data: DashboardSamplesSubscription; variables: Record<string, never> }
  DashboardChanges: { data: DashboardChangesSubscription; variables: Record<string, never> }
  DashboardTask: { data: DashboardTaskQuery; variables: DashboardTaskQueryVariables }
  DashboardTimeline: { data: DashboardTimelineQuery; variables: DashboardTimelineQueryVariables }
  DashboardTimelineLive: {
    data: DashboardTimelineLiveSubscription
    variables: DashboardTimelineLiveSubscriptionVariables
  }
}
export type Task = DashboardTaskFieldsFragment

// The operations' text, as schema/operations.graphql has them: the page carries them in a JSON
// data block (never run, so the page's policy needs no inline script).
export const operationTexts = JSON.parse(
  document.getElementById('dashboard-operations')?.textContent ?? '{}',
) as Record<string, string>
export const operationText = (name: keyof Operations) => operationTexts[name] ?? ''

/** The address of a task's page (/dashboard/task/<id>), relative to the dashboard's. */
export const taskPageHref = (id: string) => `dashboard/task/${encodeURIComponent(id)}`

/** An element the page's HTML has: the page and this script go together. */
export function $<T extends HTMLElement = HTMLElement>(id: string): T {
  const element = document.getElementById(id)
  if (!element) throw new Error(`the page has no #${id}`)
  return element as T
}
/** An element inside `root` that its template has. */
export function within<T extends Element = HTMLElement>(root: ParentNode, selector: string): T {
  const element = root.querySelector(selector)
  if (!element) throw new Error(`no ${selector} in the page's template`)
  return element as T
}
export const noticeEl = $('notice')
export const connectionEl = $('connection')
export const keyInput = $<HTMLInputElement>('api-key')
export const forgetButton = $<HTMLButtonElement>('forget-key')

export type Maybe<T> = T | null | undefined
export const numbers = new Intl.NumberFormat('en')
export const count = (n: Maybe<number>) => (n === null || n === undefined ? '–' : numbers.format(n))
export const bitrate = (bps: Maybe<number>) => {
  if (bps === null || bps === undefined) return '–'
  const units: Array<[string, number]> = [
    ['Gb/s', 1e9],
    ['Mb/s', 1e6],
    ['kb/s', 1e3],
  ]
  for (const [unit, size] of units) if (bps >= size) return `${(bps / size).toFixed(bps >= size * 10 ? 0 : 1)} ${unit}`
  return `${Math.round(bps)} b/s`
}
export const ago = (iso: Maybe<string>) => {
  if (!iso) return 'never'
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000))
  return seconds < 90
    ? `${seconds} s ago`
    : seconds < 5400
      ? `${Math.round(seconds / 60)} min ago`
      : `${Math.round(seconds / 3600)} h ago`
}
export const ms = (value: Maybe<number>) => {
  if (value === null || value === undefined) return '–'
  return value >= 1000 ? `${(value / 1000).toFixed(value >= 10_000 ? 0 : 1)} s` : `${Math.round(value)} ms`
}
export const duration = (fromIso: string, toIso?: Maybe<string>) => {
  const seconds = Math.max(0, Math.round(((toIso ? Date.parse(toIso) : Date.now()) - Date.parse(fromIso)) / 1000))
  if (seconds < 60) return `${seconds} s`
  const minutes = Math.round(seconds / 60)
  return minutes < 60 ? `${minutes} min` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`
}
export const isLive = (task: Task) => task.status !== 'ENDED'
// A window that ends now, or at the newest point when this browser's clock is behind the gateway's.
export const windowEnding = (newest: number | undefined, length: number): [number, number] => {
  const end = Math.max(Date.now() / 1000, newest ?? 0)
  return [end - length / 1000, end]
}
// A window of at most `length` over times (seconds, oldest first), shrunk to what they cover
// (`least` at least), so a young series is not a sliver at the right edge.
export const spanShown = (times: readonly number[], length: number, least = 60_000): [number, number] => {
  const [from, end] = windowEnding(times.at(-1), length)
  return [Math.max(from, Math.min(times[0] ?? end, end - least / 1000)), end]
}

// The key the gateway expects as `Authorization: Bearer <key>`: in this tab's sessionStorage
// only, sent in a header and in graphql-ws's connection_init, never in an address.
let apiKey = sessionStorage.getItem(KEY_STORAGE) || ''
/** The key this tab uses (kept for the tab only). */
export const currentKey = () => apiKey
/** Uses (and keeps for this tab) another key; '' forgets it. */
export function useKey(key: string): void {
  apiKey = key
  if (key) sessionStorage.setItem(KEY_STORAGE, key)
  else sessionStorage.removeItem(KEY_STORAGE)
}
// The access token of the user signed in with the provider (signin/signin.client.ts), kept for the tab
// like the key. It goes first: a person signed in is who acts, whatever key the tab also holds.
const TOKEN_STORAGE = 'livegate.dashboard.token'
/** Sent when who is asking changes (signed in, renewed, signed out): every part reads afresh. */
export const ACCESS_CHANGED = 'livegate-access-changed'
export const currentToken = () => sessionStorage.getItem(TOKEN_STORAGE) || ''
/** Uses (and keeps for this tab) the signed-in user's token; '' forgets it. */
export function useToken(token: string): void {
  if (token) sessionStorage.setItem(TOKEN_STORAGE, token)
  else sessionStorage.removeItem(TOKEN_STORAGE)
  window.dispatchEvent(new Event(ACCESS_CHANGED))
}
/** The one header every request and socket of the pages carries: the token, else the key. */
export const authorization = (): Record<string, string> => {
  const bearer = currentToken() || sessionStorage.getItem(KEY_STORAGE) || ''
  return bearer ? { authorization: `Bearer ${bearer}` } : {}
}

export class KeyNeeded extends Error {}

export interface GraphQLAnswer<T> {
  data?: T | null
  errors?: Array<{ message: string; extensions?: { code?: string } }>
}

export async function request<N extends keyof Operations>(
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
    body: JSON.stringify({ query: operationText(operationName), operationName, variables }),
  })
  const answer = (await response.json().catch(() => ({}))) as GraphQLAnswer<Operations[N]['data']>
  const errors = answer.errors || []
  if (response.status === 401 || errors.some((error) => error.extensions?.code === 'UNAUTHENTICATED'))
    throw new KeyNeeded()
  if (errors.length > 0) throw new Error(errors.map((error) => error.message).join('; '))
  if (!response.ok || !answer.data) throw new Error(`the gateway answered ${response.status}`)
  return answer.data
}

export function say(text: string, kind = 'info') {
  noticeEl.textContent = text
  noticeEl.dataset.kind = kind
  noticeEl.hidden = !text
}

export function connection(state: string, text: string) {
  connectionEl.dataset.state = state
  connectionEl.textContent = text
}

export const cssVar = (name: string) => getComputedStyle(document.documentElement).getPropertyValue(name).trim()
/** The viewers' line of both pages' charts (the dashboard's and a task's), on the `y` scale. */
export const viewersSeries = (): uPlot.Series => ({
  label: 'Viewers',
  scale: 'y',
  stroke: cssVar('--viewers'),
  fill: cssVar('--viewers-fill'),
  width: 2,
  value: (_u, v) => count(v),
})

export type Sample = DashboardSamplesSubscription['metricsSampled']
export type Upstream = DashboardSummaryQuery['upstreams'][number]
export type Counts = DashboardSummaryQuery['taskCounts'][number]
export type Point = DashboardServiceQuery['serviceMetrics'][number]
/** A sparkline's points: seconds since the epoch, input bitrate. */
export type Spark = Array<[number, number]>
