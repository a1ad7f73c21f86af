import { randomUUID } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { type DocumentNode, Kind, parse } from 'graphql'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { describe, expect } from 'vitest'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { browserFixture, CHROMIUM_MISSING } from '../support/chromium.browser.js'
import { driverName } from '../support/database.fixture.js'
import { send, test } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'

const SKIP_REASON = CHROMIUM_MISSING
if (SKIP_REASON) console.warn(`playground browser test ${SKIP_REASON}`)

const SCREENSHOT = '/tmp/playground.png'
const OPERATIONS_FILE = new URL('../../schema/operations.graphql', import.meta.url)
const HTML = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' }

const operationNames = (document: DocumentNode) =>
  document.definitions.flatMap((definition) =>
    definition.kind === Kind.OPERATION_DEFINITION && definition.name ? [definition.name.value] : [],
  )

// The dashboard's own operations (`Dashboard…`, its page sends them) are no tabs.
const isDashboards = (name: string) => /^Dashboard[A-Z]/.test(name)

// The playground adds a subscription tab of its own when the sample file has none.
const BUILT_IN_SUBSCRIPTION = 'LiveNotifications'
const expectedTabNames = (document: DocumentNode) => {
  const names = operationNames(document).filter((name) => !isDashboards(name))
  const subscribes = document.definitions.some(
    (definition) =>
      definition.kind === Kind.OPERATION_DEFINITION &&
      definition.operation === 'subscription' &&
      !isDashboards(definition.name?.value ?? ''),
  )
  return subscribes ? names : [...names, BUILT_IN_SUBSCRIPTION]
}

/** The page's preloaded tabs, read from its JSON data block. */
const tabsOf = (html: string): Array<{ query: string; variables?: string }> => {
  const json = /<script type="application\/json" id="playground-config">(.*?)<\/script>/s.exec(html)?.[1]
  return (JSON.parse(json ?? '{}') as { tabs?: Array<{ query: string; variables?: string }> }).tabs ?? []
}

const assetsOf = (html: string) =>
  [...html.matchAll(/(?:src|href)="(graphql\/playground\/[^"]+)"/g)].map((match) => match[1] as string)

describe(`the playground over HTTP (${driverName})`, () => {
  test('a browser GET of /graphql gets the page, with a policy that allows this origin only', async ({ gateway }) => {
    const response = await fetch(`${gateway.url}/graphql`, { headers: HTML })
    const html = await response.text()
    expect(response.status, html).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8')
    const host = new URL(gateway.url).host
    const policy = response.headers.get('content-security-policy')
    expect(policy).toBe(
      `default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src ` +
        `'self' data:; ` +
        `connect-src 'self' ws://${host} wss://${host}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
    )
    expect(response.headers.get('x-content-type-options')).toBe('nosniff')
    const head = await fetch(`${gateway.url}/graphql`, { method: 'HEAD', headers: HTML })
    expect(head.status).toBe(200)
    expect(head.headers.get('content-security-policy')).toBe(policy)
    // Every address the page names is its own: no CDN, no web font, nothing absolute.
    expect(html).not.toMatch(/(?:src|href)="(?!graphql\/playground\/|data:)/)
    expect(html).not.toMatch(/https?:\/\//)
  })

  test('preloads every sample operation as a tab of its own, with the fragments it spreads', async ({ gateway }) => {
    const html = await (await fetch(`${gateway.url}/graphql`, { headers: HTML })).text()
    const tabs = tabsOf(html)
    const expected = expectedTabNames(parse(await readFile(OPERATIONS_FILE, 'utf8')))
    expect(expected.length).toBeGreaterThan(3)
    expect(tabs.map((tab) => operationNames(parse(tab.query)))).toEqual(expected.map((name) => [name]))
    const recent = tabs[0]?.query ?? ''
    expect(recent).toMatch(/^# The newest notifications/)
    expect(recent).toContain('fragment NotificationSummary on Notification')
    expect(recent).not.toContain('fragment NotificationValues')
    // Each tab runs on its own: the fragments are there, and the gateway accepts the document.
    // A query tab runs with its filled-in variables without any error at all.
    for (const tab of tabs) {
      const variables = tab.variables ? (JSON.parse(tab.variables) as Record<string, unknown>) : {}
      if (/^\s*subscription\b/m.test(tab.query.replace(/^#.*$/gm, ''))) continue
      const answer = await graphql(gateway, tab.query, variables)
      expect(answer.errors ?? [], `${operationNames(parse(tab.query))[0]}: ${answer.text}`).toEqual([])
    }
  })

  test('serves the files the page names, and nothing else below its folder', async ({ gateway }) => {
    const html = await (await fetch(`${gateway.url}/graphql`, { headers: HTML })).text()
    const assets = assetsOf(html)
    expect(assets).toHaveLength(6)
    for (const asset of assets) {
      const response = await fetch(`${gateway.url}/${asset}`)
      expect(response.status, asset).toBe(200)
      expect(response.headers.get('content-type'), asset).toMatch(
        asset.endsWith('.css') ? /^text\/css/ : /^text\/javascript/,
      )
      expect(response.headers.get('x-content-type-options')).toBe('nosniff')
      const etag = response.headers.get('etag') ?? ''
      expect((await response.arrayBuffer()).byteLength, asset).toBeGreaterThan(1000)
      const again = await fetch(`${gateway.url}/${asset}`, { headers: { 'if-none-match': etag } })
      expect(again.status, asset).toBe(304)
    }
    for (const path of [
      'nope.js',
      '..%2Fpackage.json',
      '..%2F..%2Fpackage.json',
      '%2Fetc%2Fpasswd',
      '__proto__',
      'constructor',
      'graphiql.js.map',
    ]) {
      const answer = await send({ method: 'GET', url: `${gateway.url}/graphql/playground/${path}` })
      expect(answer.status, path).toBe(404)
      expect(answer.body).toMatchObject({ code: 'NOT_FOUND' })
    }
  })

  test('/ and /graphql/ lead to the playground', async ({ gateway }) => {
    for (const path of ['/', '/graphql/']) {
      const answer = await fetch(`${gateway.url}${path}`, { headers: HTML, redirect: 'manual' })
      expect(answer.status, path).toBe(302)
      expect(answer.headers.get('location'), path).toBe('/graphql')
    }
    const followed = await fetch(`${gateway.url}/`, { headers: HTML })
    expect(followed.headers.get('content-type')).toBe('text/html; charset=utf-8')
  })

  test('every other GET of /graphql still reaches Apollo', async ({ gateway }) => {
    const query = await graphql(
      gateway,
      '{ __typename }',
      {},
      { method: 'GET', headers: { accept: 'application/json, text/html' } },
    )
    expect(query.status, query.text).toBe(200)
    expect(query.data).toEqual({ __typename: 'Query' })
    const json = await send({ method: 'GET', url: `${gateway.url}/graphql`, headers: { accept: 'application/json' } })
    expect(json.status).toBe(400)
    expect(json.text).not.toMatch(/<html/i)
    // HTML ranked below JSON is a GraphQL client's fallback, not a browser's navigation.
    const ranked = await send({
      method: 'GET',
      url: `${gateway.url}/graphql`,
      headers: { accept: 'application/json, text/html;q=0.5' },
    })
    expect(ranked.text).not.toMatch(/<html/i)
  })
})

interface BrowserFixtures {
  browser: Browser
  /** A fresh browser context whose every request to another host is refused and recorded. */
  session: { context: BrowserContext; page: Page; foreign: string[]; problems: string[] }
}

const browserTest = test.extend<BrowserFixtures>({
  browser: browserFixture,
  session: async ({ browser }, use) => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 860 } })
    const foreign: string[] = []
    const problems: string[] = []
    await context.route('**/*', async (route) => {
      const url = route.request().url()
      const { hostname } = new URL(url)
      if (hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]') return route.continue()
      foreign.push(url)
      return route.abort('blockedbyclient')
    })
    const page = await context.newPage()
    // A policy violation or a script error would show here long before it showed on screen.
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text())
    })
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
    await use({ context, page, foreign, problems })
    await context.close()
  },
})

const queryEditor = (page: Page) => page.locator('.graphiql-query-editor .CodeMirror')
const resultPane = (page: Page) => page.locator('.result-window')

/**
 * Opens a new tab, types the operation into its editor and runs it, as a user would. GraphiQL
 * reads the document (and so whether it is a subscription) a moment after an edit; the tab's
 * title, which it takes from the operation's name, says when it has.
 */
async function runInNewTab(page: Page, name: string, operation: string): Promise<void> {
  const tabs = page.locator('.graphiql-tab')
  const before = await tabs.count()
  await page.getByRole('button', { name: 'New tab' }).click()
  await tabs.nth(before).waitFor()
  await queryEditor(page).click()
  await page.keyboard.press('ControlOrMeta+A')
  await page.keyboard.insertText(operation)
  await page.locator('.graphiql-tab-active').filter({ hasText: name }).waitFor()
  await page.locator('.graphiql-execute-button').click()
}

/** Waits for the result pane to show an answer, and reads it. */
async function answerShown(page: Page, timeout = 20_000): Promise<string> {
  await resultPane(page)
    .filter({ hasText: /"(data|errors)"/ })
    .waitFor({ timeout })
  return resultPane(page).innerText()
}

describe.skipIf(SKIP_REASON !== undefined)(
  `the playground in Chromium (${driverName})${SKIP_REASON ? ` ${SKIP_REASON}` : ''}`,
  () => {
    browserTest(
      'renders GraphiQL with the sample operations, runs a query, and asks no other host for anything',
      { timeout: 180_000 },
      async ({ gateway, session }) => {
        const { page, foreign, problems } = session
        await page.goto(`${gateway.url}/graphql`)
        await queryEditor(page).waitFor()
        // The first tab is the first sample operation, in the editor as the file writes it.
        await page.locator('.graphiql-query-editor').filter({ hasText: 'query RecentNotifications' }).waitFor()
        const tabTitles = await page.locator('.graphiql-tab').allInnerTexts()
        expect(tabTitles.join(' ')).toContain('RecentNotifications')
        expect(tabTitles.join(' ')).toContain('TaskDetail')

        await runInNewTab(page, 'Count', 'query Count {\n  notifications(first: 1) { totalCount }\n}')
        const result = await answerShown(page)
        expect(result).toMatch(/"notifications":\s*\{\s*"totalCount":\s*\d+/)
        expect(result).not.toMatch(/"errors"/)

        await page.screenshot({ path: SCREENSHOT })
        expect(foreign).toEqual([])
        expect(problems).toEqual([])
      },
    )

    browserTest(
      'runs every sample tab as opened, the subscription included',
      { timeout: 180_000 },
      async ({ gateway, session, deliver }) => {
        const { page, foreign, problems } = session
        await page.goto(`${gateway.url}/graphql`)
        await queryEditor(page).waitFor()
        const document = parse(await readFile(OPERATIONS_FILE, 'utf8'))
        const names = expectedTabNames(document)
        const subscriptions = new Set([
          BUILT_IN_SUBSCRIPTION,
          ...document.definitions.flatMap((definition) =>
            definition.kind === Kind.OPERATION_DEFINITION && definition.operation === 'subscription' && definition.name
              ? [definition.name.value]
              : [],
          ),
        ])
        const tabs = page.locator('.graphiql-tab')
        await expect.poll(() => tabs.count(), { timeout: 30_000 }).toBe(names.length)
        for (const [index, name] of names.entries()) {
          await tabs.nth(index).locator('.graphiql-tab-button').click()
          await page.locator('.graphiql-tab-active').filter({ hasText: name }).waitFor()
          // GraphiQL reads the tab's document (and its operation name) a moment after the switch.
          await page
            .locator('.graphiql-query-editor')
            .filter({ hasText: new RegExp(`(query|subscription) ${name}\\b`) })
            .waitFor()
          await page.locator('.graphiql-execute-button').click()
          if (!subscriptions.has(name)) {
            const result = await answerShown(page, 30_000)
            expect(result, name).toMatch(/"data"/)
            expect(result, name).not.toMatch(/"errors"/)
            continue
          }
          // A subscription runs until stopped: callbacks about the sample variables' task and user go
          // out until an event shows; one whose events none of them make (a task of the demo's own
          // service code) must at least have started without an error.
          const deadline = Date.now() + 15_000
          let result = ''
          while (Date.now() < deadline && !result.includes('"data"') && !result.includes('"errors"')) {
            const answer = await deliver(sampleCallbacks('demo-task').liveStart as Record<string, string>)
            expect(answer.status, answer.text).toBe(200)
            result = await answerShown(page, 1000).catch(() => '')
          }
          expect(result, name).not.toMatch(/"errors"/)
          // Stopped, so the next tab's run is a run of its own.
          await page.locator('.graphiql-execute-button').click()
        }
        expect(foreign).toEqual([])
        expect(problems).toEqual([])
      },
    )

    browserTest(
      'streams a subscription over graphql-ws on the same URL: a callback delivered shows in the result pane',
      { timeout: 180_000 },
      async ({ gateway, session, deliver }) => {
        const { page, foreign, problems } = session
        const sockets: string[] = []
        page.on('websocket', (socket) => sockets.push(socket.url()))
        await page.goto(`${gateway.url}/graphql`)
        await queryEditor(page).waitFor()

        await runInNewTab(
          page,
          'Events',
          'subscription Events {\n  notificationReceived { __typename id type taskId }\n}',
        )
        // Until the server has the subscription an event would pass it by, and nothing on the page
        // tells when it has; so callbacks of new tasks go out, one a second, until one shows.
        const sent: string[] = []
        const deadline = Date.now() + 30_000
        let result = ''
        while (Date.now() < deadline && !sent.some((id) => result.includes(id)) && !result.includes('"errors"')) {
          const taskId = `task-${randomUUID()}`
          sent.push(taskId)
          const answer = await deliver(sampleCallbacks(taskId).liveStart as Record<string, string>)
          expect(answer.status, answer.text).toBe(200)
          result = await answerShown(page, 1000).catch(() => '')
        }
        expect(result, `${sent.length} callbacks sent`).toContain('"notificationReceived"')
        expect(result).not.toMatch(/"errors"/)
        expect(
          sent.some((id) => result.includes(`"taskId": "${id}"`)),
          result,
        ).toBe(true)
        expect(result).toMatch(/"__typename":\s*"LiveStartNotification"/)
        expect(result).toMatch(/"type":\s*0/)
        expect(sockets).toEqual([`${gateway.url.replace(/^http/, 'ws')}/graphql`])

        await page.screenshot({ path: SCREENSHOT })
        expect(foreign).toEqual([])
        expect(problems).toEqual([])
      },
    )
  },
)
