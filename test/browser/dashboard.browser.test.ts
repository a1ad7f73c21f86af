import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdirSync, readFileSync } from 'node:fs'
import { type AddressInfo, createServer } from 'node:net'
import { buildSchema, Kind, parse, validate } from 'graphql'
import type { Browser, Page } from 'playwright-core'
import { describe, expect } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { type Simulator, startSimulator } from '../../src/simulator/simulator.run.js'
import { browserFixture, CHROMIUM_MISSING } from '../support/chromium.browser.js'
import { driverName } from '../support/database.fixture.js'
import { send, TEST_CONFIG, test } from '../support/gateway.fixture.js'
import { LIVEGATE_COMMAND, ROOT } from '../support/livegate.process.js'

const SKIP_REASON = CHROMIUM_MISSING
if (SKIP_REASON) console.warn(`dashboard browser test ${SKIP_REASON}`)

// Git-ignored: what the page looked like, for a person to look at after a run.
const ARTIFACTS = `${ROOT}/test/artifacts`
const HTML = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' }
const API_KEY = 'dash-key-5c1e0a7d9b3f42e8'
// Run in the page: the key the dashboard keeps for the tab.
const KEPT_KEY = "sessionStorage.getItem('livegate.dashboard.apiKey')"
// What dashboard.client.ts, dashboard.actions.ts, dashboard.incidents.ts and dashboard.recordings.ts send, and the
// task query a row's link opens; the task page's (taskpage/: taskpage.client.ts, taskpage.bands.ts, timeline.export.ts) are served with them.
const PAGE_OPERATIONS = [
  'DashboardAcknowledge',
  'DashboardActions',
  'DashboardChanges',
  'DashboardIncidents',
  'DashboardOwnTasks',
  'DashboardRecordings',
  'DashboardReplay',
  'DashboardSamples',
  'DashboardService',
  'DashboardStop',
  'DashboardSummary',
  'DashboardTask',
  'DashboardTimeline',
  'DashboardTimelineLive',
  'DashboardViewer',
  'DashboardWebhooks',
]

const freePort = async () => {
  const probe = createServer().listen(0, '127.0.0.1')
  await once(probe, 'listening')
  const { port } = probe.address() as AddressInfo
  await new Promise((resolve) => probe.close(resolve))
  return port
}

/** `livegate demo` as a user runs it, and the dashboard address it prints. */
async function startDemo(): Promise<{ process: ChildProcess; dashboard: string; output: () => string }> {
  const simulatorPort = await freePort()
  const child = spawn(
    process.execPath,
    [...LIVEGATE_COMMAND, 'demo', '--port', '0', '--simulator-port', String(simulatorPort)],
    {
      cwd: ROOT,
      env: { ...process.env, LOG_LEVEL: 'warn' },
    },
  )
  let printed = ''
  child.stdout?.on('data', (chunk: Buffer) => (printed += chunk))
  child.stderr?.on('data', (chunk: Buffer) => (printed += chunk))
  try {
    // A limit against a hang: on a busy machine the demo itself takes minutes to start.
    await expect
      .poll(() => /watch the dashboard at (http:\/\/\S+)/.exec(printed)?.[1], { timeout: 240_000, interval: 250 })
      .toBeDefined()
  } catch (error) {
    child.kill('SIGKILL')
    throw new Error(`the demo printed no dashboard address: ${printed}`, { cause: error })
  }
  return {
    process: child,
    dashboard: /watch the dashboard at (http:\/\/\S+)/.exec(printed)?.[1] as string,
    output: () => printed,
  }
}

interface Watched {
  page: Page
  /** Requests to another host: refused, and recorded here. */
  foreign: string[]
  /** Console errors and page errors (a policy violation shows here first). */
  problems: string[]
  /** Every address the page asked for, sockets included. */
  requested: string[]
  /** Top-level navigations: one per load, so a reload would show. */
  navigations: string[]
}

async function watchedPage(browser: Browser): Promise<Watched> {
  const context = await browser.newContext({ viewport: { width: 1440, height: 1100 } })
  const watched: Watched = { page: await context.newPage(), foreign: [], problems: [], requested: [], navigations: [] }
  await context.route('**/*', async (route) => {
    const url = route.request().url()
    watched.requested.push(url)
    if (['127.0.0.1', 'localhost', '[::1]'].includes(new URL(url).hostname)) return route.continue()
    watched.foreign.push(url)
    return route.abort('blockedbyclient')
  })
  const { page } = watched
  page.on('websocket', (socket) => watched.requested.push(socket.url()))
  page.on('console', (message) => {
    if (message.type() === 'error') watched.problems.push(message.text())
  })
  page.on('pageerror', (error) => watched.problems.push(`page error: ${error.message}`))
  page.on('framenavigated', (frame) => {
    if (frame === page.mainFrame()) watched.navigations.push(frame.url())
  })
  return watched
}

const section = (page: Page, code: string) => page.locator(`section.service[data-service-code="${code}"]`)
const chartPoints = async (page: Page, code: string) =>
  Number((await section(page, code).locator('.chart').getAttribute('data-points')) ?? 0)
const lastSampleAt = (page: Page, code: string) => section(page, code).getAttribute('data-last-sample-at')

const browserTest = test.extend<{ browser: Browser }>({
  browser: browserFixture,
})

describe(`the dashboard over HTTP (${driverName})`, () => {
  test('serves the page with a policy that allows this origin only and no inline script or style', async ({
    gateway,
  }) => {
    const response = await fetch(`${gateway.url}/dashboard`, { headers: HTML })
    const html = await response.text()
    expect(response.status, html).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8')
    const host = new URL(gateway.url).host
    expect(response.headers.get('content-security-policy')).toBe(
      `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self' data:; ` +
        `connect-src 'self' ws://${host} wss://${host}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
    )
    expect(html).not.toMatch(/https?:\/\//)
    // No inline script: the one element without a source is a JSON data block, never run.
    expect(html.replace(/<script type="application\/json" id="dashboard-operations">[^<]*<\/script>/, '')).not.toMatch(
      /<script(?![^>]*\bsrc=)/,
    )
    expect(html).not.toMatch(/\sstyle=/)
    // The operations the page sends: schema/operations.graphql's `Dashboard…`, each whole (its
    // fragments with it) and valid against the schema, as the codegen types of the scripts say.
    const block = /<script type="application\/json" id="dashboard-operations">([^<]*)<\/script>/.exec(html)?.[1]
    const operations = JSON.parse(block ?? '{}') as Record<string, string>
    expect(Object.keys(operations).sort()).toEqual(PAGE_OPERATIONS)
    const schema = buildSchema(readFileSync(new URL('../../schema/schema.graphql', import.meta.url), 'utf8'))
    for (const [name, text] of Object.entries(operations)) {
      const document = parse(text)
      expect(
        document.definitions.flatMap((definition) =>
          definition.kind === Kind.OPERATION_DEFINITION ? [definition.name?.value] : [],
        ),
        name,
      ).toEqual([name])
      expect(
        validate(schema, document).map((error) => error.message),
        name,
      ).toEqual([])
    }
    const assets = [...html.matchAll(/(?:src|href)="(dashboard\/[^"]+)"/g)].map((match) => match[1] as string)
    expect(assets.sort()).toEqual([
      'dashboard/dashboard.actions.js',
      'dashboard/dashboard.css',
      'dashboard/dashboard.incidents.js',
      'dashboard/dashboard.js',
      'dashboard/dashboard.recordings.js',
      'dashboard/graphql-ws.js',
      'dashboard/uplot.css',
      'dashboard/uplot.js',
    ])
    for (const asset of assets) {
      const file = await fetch(`${gateway.url}/${asset}`)
      expect(file.status, asset).toBe(200)
      expect(file.headers.get('content-type'), asset).toMatch(
        asset.endsWith('.css') ? /^text\/css/ : /^text\/javascript/,
      )
      // The page's scripts are served compiled: no TypeScript left in them.
      if (/^dashboard\/dashboard\./.test(asset) && asset.endsWith('.js'))
        expect(await file.clone().text(), asset).not.toMatch(/^import type|: HTMLElement\b|interface Operations/m)
      const again = await fetch(`${gateway.url}/${asset}`, {
        headers: { 'if-none-match': file.headers.get('etag') ?? '' },
      })
      expect(again.status, asset).toBe(304)
    }
    for (const path of ['nope.js', '..%2Fpackage.json', '%2Fetc%2Fpasswd', '__proto__', 'uPlot.iife.js']) {
      const answer = await send({ method: 'GET', url: `${gateway.url}/dashboard/${path}` })
      expect(answer.status, path).toBe(404)
    }
    const slash = await fetch(`${gateway.url}/dashboard/`, { redirect: 'manual' })
    expect(slash.status).toBe(302)
    expect(new URL(slash.headers.get('location') ?? '', `${gateway.url}/dashboard/`).pathname).toBe('/dashboard')
  })
})

describe.skipIf(SKIP_REASON !== undefined)(
  `the dashboard in Chromium (${driverName})${SKIP_REASON ? ` ${SKIP_REASON}` : ''}`,
  () => {
    browserTest(
      "against `livegate demo`: tasks, the chart's points, and a new sample arriving without a reload",
      { timeout: 420_000 },
      async ({ browser }) => {
        const demo = await startDemo()
        const watched = await watchedPage(browser)
        const { page } = watched
        try {
          await page.goto(demo.dashboard)
          const demoSection = section(page, 'DEMO')
          await demoSection.waitFor({ timeout: 60_000 })
          // Tasks in the table, live ones first, each with health and a link to the playground.
          await expect
            .poll(() => demoSection.locator('table.tasks tbody tr').count(), { timeout: 120_000 })
            .toBeGreaterThan(0)
          await expect.poll(() => chartPoints(page, 'DEMO'), { timeout: 120_000 }).toBeGreaterThan(0)
          await expect.poll(() => lastSampleAt(page, 'DEMO'), { timeout: 120_000 }).not.toBeNull()
          const first = demoSection.locator('table.tasks tbody tr').first()
          expect(await first.locator('.status').getAttribute('data-value')).not.toBe('ENDED')
          expect(await first.locator('.health').getAttribute('data-value')).toMatch(
            /^(HEALTHY|STARVING|RECONNECTING|UNKNOWN)$/,
          )

          // A new answer's samples move the chart while the page stays as it was loaded.
          const before = { at: await lastSampleAt(page, 'DEMO'), points: await chartPoints(page, 'DEMO') }
          await page.evaluate('window.loadedOnce = true')
          await expect.poll(() => lastSampleAt(page, 'DEMO'), { timeout: 120_000 }).not.toBe(before.at)
          await expect.poll(() => chartPoints(page, 'DEMO'), { timeout: 60_000 }).toBeGreaterThan(before.points)
          expect(await page.evaluate('window.loadedOnce')).toBe(true)
          expect(watched.navigations).toHaveLength(1)
          // The live tasks' input-bitrate sparklines fill from the samples.
          await expect
            .poll(
              async () =>
                Math.max(
                  0,
                  ...(await demoSection
                    .locator('table.tasks tbody tr:not(.ended) .spark')
                    .evaluateAll((els) => els.map((el) => Number(el.getAttribute('data-points'))))),
                ),
              {
                timeout: 180_000,
              },
            )
            .toBeGreaterThan(1)
          await expect.poll(() => demoSection.locator('[data-stat="viewers"]').innerText()).toMatch(/^[\d,]+$/)

          // What a new user saw first (issue 45): no empty pill after a status, a health tooltip in sentences,
          // the chart's time labels in whole minutes, each once.
          expect(
            await page
              .locator('.badge')
              .evaluateAll(
                (els) =>
                  els.filter((el) => el.getClientRects().length > 0 && (el.textContent ?? '').trim() === '').length,
              ),
          ).toBe(0)
          for (const title of await demoSection
            .locator('.health')
            .evaluateAll((els) => els.map((el) => el.getAttribute('title') ?? '')))
            expect(title).toMatch(/^([A-Z][a-z ]+ since [^.]+\. )?[^,]*\.$|^$/)
          const labels = ((await demoSection.locator('.chart').getAttribute('data-time-labels')) ?? '').split(' | ')
          expect(labels.length).toBeGreaterThan(0)
          for (const label of labels) expect(label).toMatch(/^\d{1,2}:\d{2}(\s?[AP]M)?$/)
          expect(new Set(labels).size).toBe(labels.length)
          // A replay of the demo's webhooks shows in the latest actions in words, with its endpoint.
          const replay = await send({
            method: 'POST',
            url: new URL('graphql', demo.dashboard).href,
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({
              query: 'mutation($since: DateTime) { redeliverWebhooks(endpoint: "demo", since: $since) }',
              variables: { since: new Date(Date.now() + 60_000).toISOString() },
            }),
          })
          expect(replay.body.errors, replay.text).toBeUndefined()
          const action = page.locator('#actions tbody tr').first()
          await expect.poll(() => action.locator('.kind').textContent(), { timeout: 30_000 }).toBe('replay webhooks')
          expect(await action.locator('.target').textContent()).toBe('webhook demo')
          expect(await action.locator('.cloud').textContent()).toBe('0 deliveries put back in line.')

          mkdirSync(ARTIFACTS, { recursive: true })
          await page.screenshot({ path: `${ARTIFACTS}/dashboard.png`, fullPage: true })

          // A row's link opens the playground with that task's query and its global id filled in.
          // Pinned by its id: the live table re-sorts between two reads of `.first()`.
          const taskId = await first.getAttribute('data-task-id')
          const row = demoSection.locator(`table.tasks tbody tr[data-task-id="${taskId}"]`)
          const link = (await row.locator('.open a').getAttribute('href')) ?? ''
          expect(link).toMatch(/^graphql#query=/)
          const linked = new URLSearchParams(link.slice(link.indexOf('#') + 1))
          expect(JSON.parse(linked.get('variables') ?? '{}')).toEqual({ id: taskId })
          const playground = await page.context().newPage()
          await playground.goto(new URL(link, demo.dashboard).href)
          await playground
            .locator('.graphiql-tab-active')
            .filter({ hasText: 'DashboardTask' })
            .waitFor({ timeout: 60_000 })
          await playground.locator('.graphiql-query-editor').filter({ hasText: 'query DashboardTask' }).waitFor()
          await playground.locator('.graphiql-execute-button').click()
          await playground
            .locator('.result-window')
            .filter({ hasText: /"(data|errors)"/ })
            .waitFor({ timeout: 60_000 })
          const result = await playground.locator('.result-window').innerText()
          expect(result).not.toMatch(/"errors"/)
          expect(result).toContain(taskId ?? '-')

          expect(watched.foreign).toEqual([])
          expect(watched.problems).toEqual([])
        } finally {
          // What the page showed when the test ended, passed or not.
          mkdirSync(ARTIFACTS, { recursive: true })
          await page.screenshot({ path: `${ARTIFACTS}/dashboard-end.png`, fullPage: true }).catch(() => undefined)
          await page.context().close()
          demo.process.kill('SIGKILL')
        }
      },
    )

    browserTest(
      "behind an API key: typed in, kept in sessionStorage, never in an address; only the key's service codes",
      { timeout: 420_000 },
      async ({ browser, db }) => {
        const simulatorPort = await freePort()
        const secret = 'keyed-demo-secret'
        const config = loadConfig({
          env: {},
          value: {
            ...TEST_CONFIG,
            services: ['DEMO', 'OTHER'].map((serviceCode) => ({
              serviceCode,
              secrets: [secret],
              baseUrl: `http://127.0.0.1:${simulatorPort}`,
            })),
            upstream: { pollIntervalMs: 1000 },
            apiKeys: [{ name: 'dash', key: API_KEY, serviceCodes: ['DEMO'] }],
          },
        })
        let gateway: Gateway | undefined
        let simulator: Simulator | undefined
        const watched = await watchedPage(browser)
        const { page } = watched
        try {
          gateway = await startGateway(config, { database: db.database })
          simulator = await startSimulator({
            port: simulatorPort,
            services: ['DEMO', 'OTHER'].map((serviceCode) => ({ serviceCode, secret })),
            gatewayUrl: gateway.url,
            seed: 3,
            sessions: 6,
            rate: 20,
            loop: true,
          })
          await page.goto(`${gateway.url}/dashboard`)
          await page.locator('#notice').filter({ hasText: 'needs an API key' }).waitFor({ timeout: 60_000 })
          expect(await page.locator('section.service').count()).toBe(0)

          await page.locator('#api-key').fill(API_KEY)
          await page.locator('#key-form button[type="submit"]').click()
          const demoSection = section(page, 'DEMO')
          await demoSection.waitFor({ timeout: 60_000 })
          await expect
            .poll(() => demoSection.locator('table.tasks tbody tr').count(), { timeout: 120_000 })
            .toBeGreaterThan(0)
          await expect.poll(() => lastSampleAt(page, 'DEMO'), { timeout: 120_000 }).not.toBeNull()
          expect(await page.evaluate(KEPT_KEY)).toBe(API_KEY)
          expect(await page.locator('#api-key').inputValue()).toBe('')

          // Kept for the tab: a reload reads on without asking again.
          await page.reload()
          await expect
            .poll(() => section(page, 'DEMO').locator('table.tasks tbody tr').count(), { timeout: 120_000 })
            .toBeGreaterThan(0)
          const at = await lastSampleAt(page, 'DEMO')
          await expect.poll(() => lastSampleAt(page, 'DEMO'), { timeout: 120_000 }).not.toBe(at)
          // The other code's tasks are polled and sampled all along, and never shown.
          expect(
            await page
              .locator('section.service')
              .evaluateAll((els) => els.map((el) => el.getAttribute('data-service-code'))),
          ).toEqual(['DEMO'])

          expect(watched.requested.length).toBeGreaterThan(5)
          expect(watched.requested.filter((url) => url.includes(API_KEY))).toEqual([])
          expect(watched.navigations.filter((url) => url.includes(API_KEY))).toEqual([])

          // Forgotten: the next load asks again.
          await page.locator('#forget-key').click()
          await page.locator('#notice').filter({ hasText: 'needs an API key' }).waitFor({ timeout: 60_000 })
          expect(await page.evaluate(KEPT_KEY)).toBeNull()
          expect(watched.foreign).toEqual([])
          // The refused requests before the key was typed are the browser's own 401 lines, nothing else.
          expect(watched.problems.filter((problem) => !/401 \(Unauthorized\)/.test(problem))).toEqual([])
        } finally {
          await page.context().close()
          await simulator?.stop()
          await gateway?.close()
        }
      },
    )
  },
)
