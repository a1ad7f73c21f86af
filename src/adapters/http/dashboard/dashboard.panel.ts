// One side panel of the dashboard (the actions, the incidents): a table drawn from one query and
// read again every few seconds, what the tab's key may do (`viewer { canOperate }`, asked again
// whenever the key changes), and dashboard.js's task rows, watched so the panel can mark them
// without reaching into its code. Loaded by dashboard.actions.js and dashboard.incidents.js.
import type { DashboardViewerQuery, DashboardViewerQueryVariables } from '../../../../schema/client/operations.js'
import { ACCESS_CHANGED, authorization } from './dashboard.page.js'

const endpoint = new URL('graphql', window.location.href)

// As the page carries them (dashboard.plugin.ts), from schema/operations.graphql.
const operationTexts = JSON.parse(document.getElementById('dashboard-operations')?.textContent ?? '{}') as Record<
  string,
  string
>

/** One operation a panel sends: what it answers, and the variables it takes. */
export interface Operation {
  data: unknown
  variables: unknown
}
/** What every panel asks first. */
export interface ViewerOperation {
  DashboardViewer: { data: DashboardViewerQuery; variables: DashboardViewerQueryVariables }
}

/** What a panel is made of. */
export interface PanelOptions {
  /** The section's id and class; its "nothing" line is `.no-<id>`. */
  id: string
  heading: string
  /** The table's class, and its header cells. */
  list: string
  columns: readonly string[]
  empty: string
  /** Where it goes: just before or just after the page's services. */
  place: 'before' | 'after'
  refreshMs: number
  /** Shown (and read) only for a key that may operate; else shown to every key. */
  operatorsOnly: boolean
  /** The rows to show, read again at each refresh. */
  rows: () => Promise<HTMLTableRowElement[]>
  /** When the key changed, and again once what it may do is known. */
  onPermission?: () => void
  /** Called when dashboard.js's task rows change; with `attributes`, also when those change on them. */
  watchTasks: { run: () => void; attributes?: readonly string[] }
}

/** An element the page's HTML has: the page and its scripts go together. */
function $(id: string): HTMLElement {
  const element = document.getElementById(id)
  if (!element) throw new Error(`the page has no #${id}`)
  return element
}

/** A table row of plain cells, each `[text, class]`. */
export function cellsRow(cells: ReadonlyArray<readonly [string, string]>): HTMLTableRowElement {
  const tr = document.createElement('tr')
  for (const [text, className] of cells) {
    const td = document.createElement('td')
    td.className = className
    td.textContent = text
    tr.append(td)
  }
  return tr
}

/** dashboard.js's task rows, which panels mark. */
export const taskRows = (): NodeListOf<HTMLTableRowElement> =>
  $('services').querySelectorAll<HTMLTableRowElement>('table.tasks tbody tr[data-task-id]')

export class Panel<O extends { [N in keyof O]: Operation } & ViewerOperation> {
  readonly element = document.createElement('section')
  /** Whether the tab's key may operate (false until the gateway says so). */
  canOperate = false
  private generation = 0
  private timer: ReturnType<typeof setTimeout> | undefined

  constructor(private readonly options: PanelOptions) {
    const { element } = this
    element.id = options.id
    element.className = options.id
    element.hidden = options.operatorsOnly
    const head = options.columns.map((column) => `<th>${column}</th>`).join('')
    element.innerHTML =
      `<h2>${options.heading}</h2><table class="${options.list}"><thead><tr>${head}</tr></thead><tbody></tbody>` +
      `</table><p class="no-${options.id}">${options.empty}</p>`
    if (options.place === 'before') $('services').before(element)
    else $('services').after(element)
  }

  /** Starts watching the key and the task rows, and asks what the key may do. */
  start(): void {
    const { run, attributes } = this.options.watchTasks
    new MutationObserver(run).observe($('services'), {
      childList: true,
      subtree: true,
      ...(attributes ? { attributes: true, attributeFilter: [...attributes] } : {}),
    })
    // A new key (or none): dashboard.js keeps it first, its listeners being registered earlier.
    $('key-form').addEventListener('submit', () => void this.check())
    $('forget-key').addEventListener('click', () => void this.check())
    window.addEventListener(ACCESS_CHANGED, () => void this.check())
    void this.check()
  }

  async request<N extends keyof O & string>(operationName: N, variables: O[N]['variables']): Promise<O[N]['data']> {
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
      data?: O[N]['data'] | null
      errors?: Array<{ message: string }>
    }
    if (answer.errors?.length) throw new Error(answer.errors.map((error) => error.message).join('; '))
    if (!answer.data) throw new Error(`the gateway answered ${response.status}`)
    return answer.data
  }

  private get active(): boolean {
    return !this.options.operatorsOnly || this.canOperate
  }

  /** Reads the rows again now, and every `refreshMs` after, while the panel is shown. */
  async refresh(): Promise<void> {
    clearTimeout(this.timer)
    const run = this.generation
    try {
      const rows = await this.options.rows()
      if (run !== this.generation || !this.active) return
      this.element.querySelector('tbody')?.replaceChildren(...rows)
      const none = this.element.querySelector<HTMLElement>(`.no-${this.options.id}`)
      if (none) none.hidden = rows.length > 0
    } catch {
      // The main view reports what the gateway says; the panel waits for the next look.
    }
    if (run === this.generation && this.active)
      this.timer = setTimeout(() => void this.refresh(), this.options.refreshMs)
  }

  /** Asks what the tab's key may do, then shows (or hides) the panel and reads its rows. */
  private async check(): Promise<void> {
    const run = ++this.generation
    this.canOperate = false
    clearTimeout(this.timer)
    if (this.options.operatorsOnly) this.element.hidden = true
    this.options.onPermission?.()
    try {
      const viewer = await this.request('DashboardViewer', {})
      if (run !== this.generation) return
      this.canOperate = viewer.viewer.canOperate === true
    } catch {
      // No key yet, or a refused one: nothing to offer; a panel for every key shows what it may read.
      if (this.options.operatorsOnly) return
    }
    if (run !== this.generation) return
    if (this.options.operatorsOnly) {
      document.body.dataset.canOperate = String(this.canOperate)
      if (!this.canOperate) return
      this.element.hidden = false
      this.options.onPermission?.()
    }
    void this.refresh()
  }
}
