import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Browser, Page } from 'playwright-core'
import { describe, expect } from 'vitest'
import { toGlobalId } from '../../src/adapters/graphql/global.id.js'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { browserFixture, CHROMIUM_MISSING } from '../support/chromium.browser.js'
import { driverName } from '../support/database.fixture.js'
import { freePort } from '../support/free.port.js'
import { graphql } from '../support/graphql.client.js'
import { deliverTo, SECRET, TEST_CONFIG, test } from '../support/gateway.fixture.js'
import { ROOT } from '../support/livegate.process.js'
import { type OidcProvider, startOidcProvider } from '../support/oidc.flow.js'

// The dashboard signs in against a real OpenID provider (oidc-provider, its own process): the
// provider's login form filled in, the broadcaster's own tasks, recordings and incidents shown (another
// user's not), and Sign out forgets the token and ends the provider's session.

const browserTest = test.extend<{ browser: Browser }>({ browser: browserFixture })
// Run in the page: what the tab keeps of a sign-in (the page's token, oidc-client-ts's user).
const TOKEN = "sessionStorage.getItem('livegate.dashboard.token')"
// The provider gave a refresh token: the renewal needs no iframe and no third-party cookie.
const REFRESHABLE =
  "Object.entries(sessionStorage).some(([k, v]) => k.startsWith('oidc.user') && !!JSON.parse(v).refresh_token)"
const KEPT = "Object.keys(sessionStorage).filter((k) => k === 'livegate.dashboard.token' || k.startsWith('oidc.user'))"

// The cloud's task_list: both broadcasters' tasks live with two viewers each, so the rule below
// opens an incident about each.
async function listingCloud(): Promise<Server> {
  const task = (id: string, user: string) => ({
    id,
    vs_id: 'xvs-1',
    input_bytes: 4096,
    inputs: [{ user_name: user, device_type: 2, url: '' }],
    outputs: [
      { tag: 'hd', format: 'flv', http_connections_num: 2, http_output_bytes: 1000, live_url: '', streams: [] },
    ],
  })
  const server = createServer((_request, response) => {
    response.setHeader('content-type', 'application/json')
    const list = [task('mine-live', 'anchor_07'), task('theirs-live', 'anchor_08')]
    response.end(JSON.stringify({ ret: 0, task_list: list, user_list: [] }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return server
}

describe.skipIf(CHROMIUM_MISSING !== undefined)(
  `the dashboard's sign-in in Chromium (${driverName})${CHROMIUM_MISSING ? ` ${CHROMIUM_MISSING}` : ''}`,
  () => {
    browserTest(
      "a broadcaster signs in through the provider's form (from the dashboard or a task's page), sees only their own rows, and signs out",
      { timeout: 300_000 },
      async ({ browser, db }) => {
        let gateway: Gateway | undefined
        let provider: OidcProvider | undefined
        let page: Page | undefined
        const cloud = await listingCloud()
        try {
          const port = await freePort()
          // Tokens of 75 s: the page renews them (with the refresh token) a minute before they expire.
          provider = await startOidcProvider([`http://127.0.0.1:${port}/dashboard`], 75)
          const config = loadConfig({
            env: {},
            value: {
              ...TEST_CONFIG,
              port,
              services: [
                {
                  serviceCode: 'TESTING',
                  secrets: [SECRET],
                  baseUrl: `http://127.0.0.1:${(cloud.address() as AddressInfo).port}`,
                },
              ],
              upstream: { pollIntervalMs: 500, timeoutMs: 2000 },
              alerts: { rules: [{ name: 'thin-audience', when: 'task.viewers', below: 5, severity: 'INFO' }] },
              // With keys, nobody reads without a key or a sign-in.
              apiKeys: [{ name: 'ops', key: 'ops-key-signin-3f1c', serviceCodes: ['*'] }],
              auth: {
                jwt: { jwksUrl: provider.jwksUri, issuer: provider.issuer, audience: 'livegate' },
                oidc: { issuer: provider.issuer, clientId: 'livegate-dashboard', scope: 'openid profile livegate' },
              },
            },
          })
          gateway = await startGateway(config, { database: db.database })
          const now = String(Math.floor(Date.now() / 1000))
          // Two broadcasters of TESTING, each with a live task and a recording.
          for (const [taskId, author] of [
            ['mine-live', 'anchor_07'],
            ['theirs-live', 'anchor_08'],
          ]) {
            const samples = sampleCallbacks(taskId as string)
            for (const fields of [samples.liveStart, samples.archived])
              expect(
                (await deliverTo(gateway, { ...fields, author, created_at: now } as Record<string, string>)).status,
              ).toBe(200)
          }

          const context = await browser.newContext({ viewport: { width: 1440, height: 900 } })
          page = await context.newPage()
          const problems: string[] = []
          page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
          await page.goto(`${gateway.url}/dashboard`)
          await page.locator('#notice').filter({ hasText: 'needs an API key' }).waitFor({ timeout: 60_000 })
          await page.locator('#sign-in').click()
          // The provider's own login form, on its origin.
          await page.waitForURL(`${provider.issuer}/interaction/**`, { timeout: 60_000 })
          await page.locator('input[name="login"]').fill('anchor.07')
          await page.locator('input[name="password"]').fill('any password')
          await page.locator('button[type="submit"]').click()
          await page.waitForURL(`${gateway.url}/dashboard`, { timeout: 60_000 })

          await expect
            .poll(() => page?.locator('#signed-in-as').innerText(), { timeout: 60_000 })
            .toBe('Signed in as Anchor Seven (broadcaster anchor_07)')
          expect(await page.locator('#sign-out').isVisible()).toBe(true)
          expect(await page.locator('#sign-in').isHidden()).toBe(true)
          // The code is not left in the address.
          expect(page.url()).toBe(`${gateway.url}/dashboard`)
          const services = page.locator('#services')
          await expect.poll(() => services.innerText(), { timeout: 60_000 }).toContain('mine-live')
          const recordings = page.locator('#recordings tbody')
          await expect.poll(() => recordings.innerText(), { timeout: 60_000 }).toContain('mine-live.mp4')
          const incidents = page.locator('#incidents tbody')
          await expect.poll(() => incidents.innerText(), { timeout: 60_000 }).toContain('TESTING / mine-live')
          // The other broadcaster's rows exist (an operator's key reads both), and are not shown here.
          const everyone = async () =>
            (
              await graphql<{ incidents: { edges: Array<{ node: { task: { taskId: string } | null } }> } }>(
                gateway as Gateway,
                '{ incidents(first: 10) { edges { node { task { taskId } } } } }',
                {},
                { headers: { authorization: 'Bearer ops-key-signin-3f1c' } },
              )
            ).data?.incidents.edges.map((edge) => edge.node.task?.taskId)
          await expect.poll(everyone, { timeout: 60_000 }).toContain('theirs-live')
          expect(await services.innerText()).not.toContain('theirs-live')
          expect(await recordings.innerText()).not.toContain('theirs-live')
          expect(await incidents.innerText()).not.toContain('theirs-live')
          // Nothing shown empty: the service's freshness pill is not the broadcaster's to read.
          const emptyShown = await page
            .locator('.pill, .badge')
            .evaluateAll(
              (els) =>
                els.filter((el) => el.getClientRects().length > 0 && (el.textContent ?? '').trim() === '').length,
            )
          expect(emptyShown).toBe(0)
          expect((await page.evaluate(KEPT)) as string[]).toContain('livegate.dashboard.token')
          await page.screenshot({ path: `${ROOT}/docs/dashboard-signin.png` })

          // Renewed before it expires: a new token in the tab, and the page reads on with it.
          const first = await page.evaluate(TOKEN)
          expect(await page.evaluate(REFRESHABLE)).toBe(true)
          await expect.poll(() => page?.evaluate(TOKEN), { timeout: 120_000 }).not.toBe(first)
          await expect
            .poll(() => page?.locator('#signed-in-as').innerText(), { timeout: 60_000 })
            .toBe('Signed in as Anchor Seven (broadcaster anchor_07)')
          await expect.poll(() => services.innerText(), { timeout: 60_000 }).toContain('mine-live')
          expect(await services.innerText()).not.toContain('theirs-live')

          // A task's page in the same tab (the token is the tab's): signed in there too, their own
          // task shown, another broadcaster's answered as no task.
          const taskPage = (taskId: string) => `${gateway?.url}/dashboard/task/${toGlobalId('Task', 'TESTING', taskId)}`
          await page.goto(taskPage('mine-live'))
          await expect
            .poll(() => page?.locator('#signed-in-as').innerText(), { timeout: 60_000 })
            .toBe('Signed in as Anchor Seven (broadcaster anchor_07)')
          await expect.poll(() => page?.locator('#task-title').innerText(), { timeout: 60_000 }).toContain('mine-live')
          await page.goto(taskPage('theirs-live'))
          await page.locator('#notice').filter({ hasText: 'No task' }).waitFor({ timeout: 60_000 })
          await page.goto(`${gateway.url}/dashboard`)
          await page.locator('#sign-out').waitFor({ state: 'visible', timeout: 60_000 })

          await page.locator('#sign-out').click()
          // The provider's end-session confirmation, then back to the dashboard.
          await page.waitForURL(`${provider.issuer}/session/end**`, { timeout: 60_000 })
          await page.locator('button[name="logout"], button[type="submit"]').first().click()
          await page.waitForURL(`${gateway.url}/dashboard**`, { timeout: 60_000 })
          await page.locator('#sign-in').waitFor({ state: 'visible', timeout: 60_000 })
          expect(await page.evaluate(KEPT)).toEqual([])
          await page.locator('#notice').filter({ hasText: 'needs an API key' }).waitFor({ timeout: 60_000 })
          expect(await services.innerText()).not.toContain('mine-live')
          // Signing in from a task's page comes back to it, through the one redirect URI (the dashboard).
          await page.goto(taskPage('mine-live'))
          await page.locator('#sign-in').click()
          await page.waitForURL(`${provider.issuer}/interaction/**`, { timeout: 60_000 })
          await page.locator('input[name="login"]').fill('anchor.07')
          await page.locator('input[name="password"]').fill('any password')
          await page.locator('button[type="submit"]').click()
          await page.waitForURL(taskPage('mine-live'), { timeout: 60_000 })
          await expect.poll(() => page?.locator('#task-title').innerText(), { timeout: 60_000 }).toContain('mine-live')
          expect(await page.locator('#signed-in-as').innerText()).toBe(
            'Signed in as Anchor Seven (broadcaster anchor_07)',
          )
          expect(problems).toEqual([])
        } finally {
          await page?.context().close()
          await gateway?.close()
          await provider?.stop()
          await new Promise((resolve) => cloud.close(resolve))
        }
      },
    )
  },
)
