// The task page's Export: the whole timeline, every page read afresh with the query (what a
// support ticket should carry is what the API answers, not what this tab happened to hear).
import { type Operations, request } from '../dashboard/dashboard.page.js'

type Timeline = NonNullable<Operations['DashboardTimeline']['data']['task']>['timeline']
/** One entry of a task's timeline as the page reads and shows it. */
export type Entry = Timeline['edges'][number]['node']

// The gateway's largest page; a smaller limit there only means more pages.
const PAGE = 100
// A bound against a gateway that kept answering hasNextPage: a day's task is a few pages.
const MOST_PAGES = 1000

/** Every entry of the task's timeline after `after`, oldest first, read page by page. */
export async function readTimeline(id: string, after: string | null = null): Promise<Entry[]> {
  const entries: Entry[] = []
  let cursor = after
  for (let page = 0; page < MOST_PAGES; page += 1) {
    const data = await request('DashboardTimeline', { id, first: PAGE, after: cursor })
    if (!data.task) throw new Error(`no task ${id} for this key`)
    const { edges, pageInfo } = data.task.timeline
    entries.push(...edges.map((edge) => edge.node))
    if (!pageInfo.hasNextPage || !pageInfo.endCursor) break
    cursor = pageInfo.endCursor
  }
  return entries
}

/** The entries as JSON: the fields the query answers, subject as its id. */
export const timelineJson = (entries: readonly Entry[]) =>
  `${JSON.stringify(
    entries.map(({ at, kind, source, summary, subject }) => ({
      at,
      kind,
      source,
      summary,
      subject: subject?.id ?? null,
    })),
    null,
    2,
  )}\n`

// RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled.
const field = (value: string) => (/[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value)

/** The entries as CSV, one line each: at,kind,source,summary,subject id. */
export const timelineCsv = (entries: readonly Entry[]) =>
  [
    'at,kind,source,summary,subject id',
    ...entries.map((entry) =>
      [entry.at, entry.kind, entry.source, entry.summary, entry.subject?.id ?? ''].map(field).join(','),
    ),
  ].join('\r\n') + '\r\n'

/** Hands the text to the browser as a file to save. */
export function download(name: string, type: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }))
  const link = document.createElement('a')
  link.href = url
  link.download = name
  document.body.append(link)
  link.click()
  link.remove()
  // Revoked after the click has been handled: the download has taken the blob by then.
  setTimeout(() => URL.revokeObjectURL(url), 60_000)
}

/** The Export buttons: each reads the whole timeline, then saves it. */
export function exportButtons(id: string, taskId: () => string, failed: (error: unknown) => void): void {
  const save = (button: HTMLElement | null, format: 'json' | 'csv') =>
    button?.addEventListener('click', async () => {
      try {
        const entries = await readTimeline(id)
        const name = `timeline-${taskId() || 'task'}.${format}`
        if (format === 'json') download(name, 'application/json', timelineJson(entries))
        else download(name, 'text/csv', timelineCsv(entries))
      } catch (error) {
        failed(error)
      }
    })
  save(document.getElementById('export-json'), 'json')
  save(document.getElementById('export-csv'), 'csv')
}
