import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { type AddressInfo, createServer } from 'node:net'
import type { Browser, Page } from 'playwright-core'
import { describe, expect } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { type Simulator, startSimulator } from '../../src/simulator/simulator.run.js'
import { browserFixture, CHROMIUM_MISSING } from '../support/chromium.browser.js'
import { driverName } from '../support/database.fixture.js'
import { TEST_CONFIG, test } from '../support/gateway.fixture.js'
import { ROOT } from '../support/livegate.process.js'

const KEY = 'dash-taskpage-3e9a61c0'
const SOURCES = ['PUSHED', 'POLLED', 'INFERRED', 'DONE']
const browserTest = test.extend<{ browser: Browser }>({ browser: browserFixture })

const freePort = async () => {
  const probe = createServer().listen(0, '127.0.0.1')
  await once(probe, 'listening')
  const { port } = probe.address() as AddressInfo
  await new Promise((resolve) => probe.close(resolve))
  return port
}

interface Entry {
  at: string
  kind: string
  source: string
  summary: string
  subject: string | null
}

/** One query's data, asked with the test's key. */
async function graphql(gateway: Gateway, query: string, variables: Record<string, unknown>): Promise<any> {
  const response = await fetch(`${gateway.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ query, variables }),
  })
  const body = (await response.json()) as { data?: unknown; errors?: unknown }
  if (body.errors) throw new Error(JSON.stringify(body.errors))
  return body.data
}

/** The whole timeline as the API answers it, page by page, as a support engineer would read it. */
async function queried(gateway: Gateway, id: string): Promise<Entry[]> {
  const entries: Entry[] = []
  let after: string | null = null
  for (let page = 0; page < 100; page += 1) {
    const response = await fetch(`${gateway.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body: JSON.stringify({
        query: `query($id: ID!, $after: String) { task(id: $id) { timeline(first: 50, after: $after) {
          edges { node { at kind source summary subject { id } } } pageInfo { hasNextPage endCursor } } } }`,
        variables: { id, after },
      }),
    })
    type Node = Omit<Entry, 'subject'> & { subject: { id: string } | null }
    const body = (await response.json()) as {
      data: {
        task: { timeline: { edges: Array<{ node: Node }>; pageInfo: { hasNextPage: boolean; endCursor: string } } }
      }
    }
    const { edges, pageInfo } = body.data.task.timeline
    entries.push(...edges.map(({ node }) => ({ ...node, subject: node.subject?.id ?? null })))
    if (!pageInfo.hasNextPage) break
    after = pageInfo.endCursor
  }
  return entries
}

// A CSV line's fields (RFC 4180: quoted fields, doubled quotes).
const csvFields = (line: string) =>
  [...line.matchAll(/(?:^|,)(?:"((?:[^"]|"")*)"|([^,]*))/g)].map((m) => (m[1] ?? m[2] ?? '').replaceAll('""', '"'))

async function saved(page: Page, button: string): Promise<string> {
  const [download] = await Promise.all([page.waitForEvent('download'), page.locator(button).click()])
  return readFileSync((await download.path()) as string, 'utf8')
}

describe(`the task page over HTTP (${driverName})`, () => {
  test("one page for every task, with the dashboard's policy, files and operations", async ({ gateway }) => {
    const response = await fetch(`${gateway.url}/dashboard/task/${encodeURIComponent('VGFzazox')}`)
    const html = await response.text()
    expect(response.status, html).toBe(200)
    const dashboard = await fetch(`${gateway.url}/dashboard`)
    expect(response.headers.get('content-security-policy')).toBe(dashboard.headers.get('content-security-policy'))
    expect(html).not.toMatch(/https?:\/\//)
    expect(html.replace(/<script type="application\/json" id="dashboard-operations">[^<]*<\/script>/, '')).not.toMatch(
      /<script(?![^>]*\bsrc=)/,
    )
    // Its files are the dashboard's, one level up, so a reverse proxy's prefix is kept.
    const files = [...html.matchAll(/(?:src|href)="\.\.\/([^"/]+)"/g)].map((match) => match[1] as string)
    expect(files.sort()).toEqual(['dashboard.css', 'graphql-ws.js', 'taskpage.js', 'uplot.css', 'uplot.js'])
    for (const file of [...files, 'timeline.export.js']) {
      expect((await fetch(`${gateway.url}/dashboard/${file}`)).status, file).toBe(200)
    }
    expect(html).toContain('DashboardTimelineLive')
  })
})

describe.skipIf(CHROMIUM_MISSING !== undefined)(
  `the task page in Chromium (${driverName})${CHROMIUM_MISSING ? ` ${CHROMIUM_MISSING}` : ''}`,
  () => {
    browserTest(
      "a demo task's page: header, chart, the timeline with sources, growing live; its exports agree with the query",
      { timeout: 420_000 },
      async ({ browser, db }) => {
        const simulatorPort = await freePort()
        const secret = 'taskpage-demo-secret'
        let gateway: Gateway | undefined
        let simulator: Simulator | undefined
        const context = await browser.newContext({ viewport: { width: 1440, height: 1100 }, acceptDownloads: true })
        const page = await context.newPage()
        const problems: string[] = []
        page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
        page.on('console', (message) => {
          if (message.type() === 'error' && !/401 \(Unauthorized\)/.test(message.text())) problems.push(message.text())
        })
        try {
          const config = loadConfig({
            env: {},
            value: {
              ...TEST_CONFIG,
              services: [{ serviceCode: 'DEMO', secrets: [secret], baseUrl: `http://127.0.0.1:${simulatorPort}` }],
              upstream: { pollIntervalMs: 1000 },
              apiKeys: [{ name: 'support', key: KEY, serviceCodes: ['DEMO'], can: ['operate'] }],
              // An incident for every live task as soon as it is sampled: each task's chart has a band.
              alerts: { rules: [{ name: 'watched', when: 'task.viewers', below: 1_000_000, severity: 'INFO' }] },
            },
          })
          gateway = await startGateway(config, { database: db.database })
          simulator = await startSimulator({
            port: simulatorPort,
            services: [{ serviceCode: 'DEMO', secret }],
            gatewayUrl: gateway.url,
            seed: 3,
            sessions: 4,
            rate: 20,
            loop: true,
          })
          await page.goto(`${gateway.url}/dashboard`)
          await page.locator('#notice').filter({ hasText: 'needs an API key' }).waitFor({ timeout: 60_000 })
          await page.locator('#api-key').fill(KEY)
          await page.locator('#key-form button[type="submit"]').click()
          // An open incident's row links to its task's page (a live task, sampled: the rule opens on a sample), with
          // the incident's window marked on the chart. Its address is read in one step and followed: the panel
          // re-renders as the demo's tasks come and go. The page keeps the tab's key.
          const openLink = '#incidents tr[data-state="OPEN"] a.task-link'
          await page.locator(openLink).first().waitFor({ timeout: 120_000 })
          const href = (await page.locator(openLink).first().getAttribute('href')) as string
          const [taskPath = '', incidentPart = ''] = href.split('#incident=')
          const id = decodeURIComponent(taskPath.split('/').pop() ?? '')
          const incidentId = decodeURIComponent(incidentPart)
          expect(incidentId).not.toBe('')
          // The tasks' rows link to the same pages.
          expect(await page.locator('table.tasks tbody tr a.task-link').first().getAttribute('href')).toMatch(
            /^dashboard\/task\/[^/#]+$/,
          )
          const { task } = await graphql(gateway, 'query($id: ID!) { task(id: $id) { taskId } }', { id })
          const taskId = task.taskId as string
          await page.goto(new URL(href, page.url()).href)
          await page.waitForURL(`**/dashboard/task/${encodeURIComponent(id)}#incident=*`)

          await expect.poll(() => page.locator('#task-title').innerText(), { timeout: 60_000 }).toBe(`DEMO · ${taskId}`)
          expect(await page.locator('#task-status').innerText()).toMatch(/live|waiting reconnect|ended/)
          expect(await page.locator('#task-facts dd[data-fact="user"]').innerText()).not.toBe('–')
          expect(await page.locator('#task-outputs a').count()).toBeGreaterThan(0)
          await expect
            .poll(async () => Number(await page.locator('#task-chart').getAttribute('data-points')), {
              timeout: 120_000,
            })
            .toBeGreaterThan(0)
          expect(await page.locator('#task-chart canvas').count()).toBe(1)
          // The incident's band is marked and its window said; every incident of the task is a band.
          const marked = page.locator('#task-chart .incident-band[data-marked]')
          await expect.poll(() => marked.getAttribute('data-incident-id'), { timeout: 60_000 }).toBe(incidentId)
          expect((await marked.boundingBox())?.width).toBeGreaterThan(0)
          expect(await page.locator('#task-incident').getAttribute('data-incident-id')).toBe(incidentId)
          expect(await page.locator('#task-incident').innerText()).toMatch(/^Marked: info incident watched, /)
          await expect
            .poll(
              async () => {
                const answer = await graphql(
                  gateway as Gateway,
                  'query($id: ID!) { task(id: $id) { incidents { id } } }',
                  {
                    id,
                  },
                )
                const bands = await page
                  .locator('#task-chart .incident-band')
                  .evaluateAll((all) => all.map((band) => band.getAttribute('data-incident-id')))
                const ids = answer.task.incidents.map((incident: { id: string }) => incident.id)
                return JSON.stringify(bands.sort()) === JSON.stringify(ids.sort()) && ids.length > 0
              },
              { timeout: 60_000, interval: 1000 },
            )
            .toBe(true)
          const rows = page.locator('#timeline tbody tr')
          await expect.poll(() => rows.count(), { timeout: 60_000 }).toBeGreaterThan(1)
          const badges = await rows.locator('.badge.source').allInnerTexts()
          expect(
            badges.every((text) => SOURCES.includes(text)),
            badges.join(),
          ).toBe(true)
          expect(badges).toContain('PUSHED')
          expect(badges).toContain('POLLED')

          // Live: the line grows without a reload. Stopped through livegate, the task's line gets the action (DONE).
          await page.evaluate("document.body.dataset.sameLoad = 'yes'")
          const before = await rows.count()
          const stop = await fetch(`${gateway.url}/graphql`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
            body: JSON.stringify({
              query: 'mutation($id: ID!) { stopTask(id: $id, reason: "support ticket") { action { id state } } }',
              variables: { id },
            }),
          })
          expect(JSON.stringify(await stop.json())).not.toMatch(/"errors"/)
          await expect.poll(() => rows.count(), { timeout: 120_000 }).toBeGreaterThan(before)
          await expect
            .poll(() => page.locator('#timeline tbody tr[data-source="DONE"]').count(), { timeout: 120_000 })
            .toBeGreaterThan(0)
          expect(await page.evaluate('document.body.dataset.sameLoad')).toBe('yes')

          // The exports are every page of the query; read back to back with it until the line holds still.
          await expect
            .poll(
              async () => {
                const json = JSON.parse(await saved(page, '#export-json')) as Entry[]
                const csv = (await saved(page, '#export-csv')).trimEnd().split('\r\n')
                const answer = await queried(gateway as Gateway, id)
                const header = csv[0]
                const fromCsv = csv.slice(1).map((line) => {
                  const [at, kind, source, summary, subject] = csvFields(line)
                  return { at, kind, source, summary, subject: subject || null }
                })
                return (
                  header === 'at,kind,source,summary,subject id' &&
                  JSON.stringify(json) === JSON.stringify(answer) &&
                  JSON.stringify(fromCsv) === JSON.stringify(answer) &&
                  answer.length > 1
                )
              },
              { timeout: 120_000, interval: 1000 },
            )
            .toBe(true)

          await page.screenshot({ path: `${ROOT}/docs/task-page.png`, fullPage: true })
          expect(problems).toEqual([])
        } finally {
          await context.close()
          await simulator?.stop()
          await gateway?.close()
        }
      },
    )
  },
)
