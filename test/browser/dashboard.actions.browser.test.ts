import { once } from 'node:events'
import { type AddressInfo, createServer } from 'node:net'
import type { Browser, Page } from 'playwright-core'
import { describe, expect } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { type Simulator, startSimulator } from '../../src/simulator/simulator.run.js'
import { browserFixture, CHROMIUM_MISSING } from '../support/chromium.browser.js'
import { driverName } from '../support/database.fixture.js'
import { TEST_CONFIG, test } from '../support/gateway.fixture.js'

const SKIP_REASON = CHROMIUM_MISSING
const OPERATOR_KEY = 'dash-operator-7f0c2b9e'
const READER_KEY = 'dash-reader-1d4e8a6c'
const SECRET = 'dash-actions-secret'

const freePort = async () => {
  const probe = createServer().listen(0, '127.0.0.1')
  await once(probe, 'listening')
  const { port } = probe.address() as AddressInfo
  await new Promise((resolve) => probe.close(resolve))
  return port
}

const browserTest = test.extend<{ browser: Browser }>({ browser: browserFixture })

/** A fresh tab (its own sessionStorage) with the dashboard open behind `key`. */
async function dashboardBehind(
  browser: Browser,
  url: string,
  key: string,
): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1440, height: 1100 } })
  const page = await context.newPage()
  const problems: string[] = []
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
  page.on('console', (message) => {
    if (message.type() === 'error' && !/401 \(Unauthorized\)/.test(message.text())) problems.push(message.text())
  })
  await page.goto(`${url}/dashboard`)
  await page.locator('#notice').filter({ hasText: 'needs an API key' }).waitFor({ timeout: 60_000 })
  await page.locator('#api-key').fill(key)
  await page.locator('#key-form button[type="submit"]').click()
  return { page, problems }
}

describe.skipIf(SKIP_REASON !== undefined)(
  `the dashboard's actions in Chromium (${driverName})${SKIP_REASON ? ` ${SKIP_REASON}` : ''}`,
  () => {
    browserTest(
      'Stop: an operate key presses it and sees it through, every tab shows why the task ended, a read key sees ' +
        'no button',
      { timeout: 420_000 },
      async ({ browser, db }) => {
        const simulatorPort = await freePort()
        const config = loadConfig({
          env: {},
          value: {
            ...TEST_CONFIG,
            services: [{ serviceCode: 'DEMO', secrets: [SECRET], baseUrl: `http://127.0.0.1:${simulatorPort}` }],
            upstream: { pollIntervalMs: 1000 },
            apiKeys: [
              { name: 'desk', key: OPERATOR_KEY, serviceCodes: ['DEMO'], can: ['operate'] },
              { name: 'wall', key: READER_KEY, serviceCodes: ['DEMO'] },
            ],
          },
        })
        let gateway: Gateway | undefined
        let simulator: Simulator | undefined
        const pages: Page[] = []
        try {
          gateway = await startGateway(config, { database: db.database })
          // Slow enough that a task stays live for half a minute or more.
          simulator = await startSimulator({
            port: simulatorPort,
            services: [{ serviceCode: 'DEMO', secret: SECRET }],
            gatewayUrl: gateway.url,
            seed: 3,
            sessions: 4,
            rate: 0.4,
            loop: true,
          })

          // Read only: rows, but no Stop and no list of actions.
          const reader = await dashboardBehind(browser, gateway.url, READER_KEY)
          pages.push(reader.page)
          const readerRows = reader.page.locator(
            'section.service[data-service-code="DEMO"] table.tasks tbody tr:not(.ended)',
          )
          await expect.poll(() => readerRows.count(), { timeout: 120_000 }).toBeGreaterThan(0)
          await reader.page.locator('body[data-can-operate="false"]').waitFor({ timeout: 60_000 })
          expect(await reader.page.locator('.stop-box').count()).toBe(0)
          expect(await reader.page.locator('#actions').isHidden()).toBe(true)

          // Operate: a Stop button on each live row; press, give a reason, confirm.
          const operator = await dashboardBehind(browser, gateway.url, OPERATOR_KEY)
          const { page } = operator
          pages.push(page)
          await page.locator('body[data-can-operate="true"]').waitFor({ timeout: 60_000 })
          const liveRow = page
            .locator('section.service[data-service-code="DEMO"] table.tasks tbody tr:not(.ended)')
            .filter({ has: page.locator('button.stop') })
            .first()
          await liveRow.waitFor({ timeout: 120_000 })
          const taskId = (await liveRow.getAttribute('data-task-id')) as string
          const row = page.locator(`tr[data-task-id="${taskId}"]`)
          await row.locator('button.stop').click()
          await row.locator('input.stop-reason').fill('breaks the rules')
          await row.locator('button.stop-confirm').click()
          // The request's state, then the task's end, shown on its row.
          await expect
            .poll(() => row.locator('.stop-state').getAttribute('data-value'), { timeout: 60_000 })
            .toBe('SUCCEEDED')
          await expect.poll(() => row.locator('.status').getAttribute('data-value'), { timeout: 60_000 }).toBe('ENDED')
          await expect.poll(() => row.locator('.stop-state').innerText(), { timeout: 20_000 }).toBe('stopped')
          // The simulated cloud got the signed cancel_task.
          expect(
            simulator.server.actions.filter((action) => action.operation === 'cancel_task').map((action) => action.ret),
          ).toEqual([0])
          // And the list of the latest actions shows it, with who and why.
          const listed = page.locator('#actions tbody tr').first()
          await expect.poll(() => listed.locator('.reason').innerText(), { timeout: 30_000 }).toBe('breaks the rules')
          expect(await listed.locator('.by').innerText()).toBe('desk')
          expect(await listed.locator('.state').innerText()).toBe('succeeded')

          // Why it ended is on the row, from the task's own data: in the tab that pressed Stop, in the
          // reader's tab, open all along, and in a second operator's tab opened only now.
          await expect
            .poll(() => row.locator('.end-reason').getAttribute('data-value'), { timeout: 20_000 })
            .toBe('STOPPED')
          expect(await row.locator('.end-reason').innerText()).toBe('stopped')
          const readerRow = reader.page.locator(`tr[data-task-id="${taskId}"]`)
          await expect
            .poll(() => readerRow.locator('.end-reason').getAttribute('data-value'), { timeout: 60_000 })
            .toBe('STOPPED')
          expect(await readerRow.locator('.end-reason').innerText()).toBe('stopped')
          expect(await readerRow.locator('.status').getAttribute('data-value')).toBe('ENDED')
          const second = await dashboardBehind(browser, gateway.url, OPERATOR_KEY)
          pages.push(second.page)
          const secondRow = second.page.locator(`tr[data-task-id="${taskId}"]`)
          await expect.poll(() => secondRow.locator('.stop-state').innerText(), { timeout: 60_000 }).toBe('stopped')
          expect(await secondRow.locator('.end-reason').innerText()).toBe('stopped')
          // Every ended row says why, with a reason of the schema's.
          const reasons = await reader.page
            .locator('tr.ended .end-reason')
            .evaluateAll((badges) => badges.map((badge) => badge.getAttribute('data-value')))
          expect(reasons.length).toBeGreaterThan(0)
          for (const reason of reasons) expect(['STOPPED', 'USER_STOPPED', 'ABNORMAL', 'VANISHED']).toContain(reason)

          // The reader's page, open all along, still offers nothing.
          expect(await reader.page.locator('button.stop').count()).toBe(0)
          expect(operator.problems).toEqual([])
          expect(second.problems).toEqual([])
          expect(reader.problems).toEqual([])
        } finally {
          for (const page of pages)
            await page
              .context()
              .close()
              .catch(() => undefined)
          await simulator?.stop()
          await gateway?.close()
        }
      },
    )
  },
)
