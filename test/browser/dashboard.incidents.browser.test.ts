import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Browser, Page } from 'playwright-core'
import { describe, expect } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { browserFixture, CHROMIUM_MISSING } from '../support/chromium.browser.js'
import { driverName } from '../support/database.fixture.js'
import { deliverTo, SECRET, TEST_CONFIG, test } from '../support/gateway.fixture.js'

const OPERATOR_KEY = 'dash-incidents-operator-3b7e'
const READER_KEY = 'dash-incidents-reader-9c2a'

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

// A cloud whose one task is watched by 2 and whose input never grows: it starves from its second
// answer on (CRITICAL), and its audience is thin (INFO).
async function stalledCloud(): Promise<Server> {
  const server = createServer((_request, response) => {
    response.setHeader('content-type', 'application/json')
    const outputs = [
      {
        tag: 'hd',
        format: 'flv',
        http_connections_num: 2,
        http_output_bytes: 1000,
        live_url: 'http://xvs-1/stalled.flv',
        streams: [],
      },
    ]
    const task = {
      id: 'stalled',
      vs_id: 'xvs-1',
      input_bytes: 4096,
      inputs: [{ user_name: 'carol', device_type: 2, url: '' }],
      outputs,
    }
    response.end(JSON.stringify({ ret: 0, task_list: [task], user_list: [] }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return server
}

describe.skipIf(CHROMIUM_MISSING !== undefined)(
  `the dashboard's incidents in Chromium (${driverName})${CHROMIUM_MISSING ? ` ${CHROMIUM_MISSING}` : ''}`,
  () => {
    browserTest(
      'open incidents first, coloured by severity, with their summary; an operate key acknowledges; the task row ' +
        'is marked',
      { timeout: 300_000 },
      async ({ browser, db }) => {
        const cloud = await stalledCloud()
        let gateway: Gateway | undefined
        const pages: Page[] = []
        try {
          const config = loadConfig({
            env: {},
            value: {
              ...TEST_CONFIG,
              services: [
                {
                  serviceCode: 'TESTING',
                  secrets: [SECRET],
                  baseUrl: `http://127.0.0.1:${(cloud.address() as AddressInfo).port}`,
                },
              ],
              upstream: { pollIntervalMs: 500, timeoutMs: 2000 },
              apiKeys: [
                { name: 'desk', key: OPERATOR_KEY, serviceCodes: ['TESTING'], can: ['operate'] },
                { name: 'wall', key: READER_KEY, serviceCodes: ['TESTING'] },
              ],
              alerts: {
                rules: [
                  { name: 'thin-audience', when: 'task.viewers', below: 5, severity: 'INFO' },
                  { name: 'starving', when: 'task.health', is: ['STARVING'], severity: 'CRITICAL' },
                ],
              },
            },
          })
          gateway = await startGateway(config, { database: db.database })
          expect(
            (await deliverTo(gateway, sampleCallbacks('stalled', 'TESTING').liveStart as Record<string, string>))
              .status,
          ).toBe(200)

          const { page, problems } = await dashboardBehind(browser, gateway.url, OPERATOR_KEY)
          pages.push(page)
          const rows = page.locator('#incidents tbody tr')
          await expect.poll(() => rows.count(), { timeout: 60_000 }).toBe(2)
          // The most severe first, whichever opened first.
          expect([
            await rows.nth(0).getAttribute('data-severity'),
            await rows.nth(1).getAttribute('data-severity'),
          ]).toEqual(['CRITICAL', 'INFO'])
          const starving = rows.first()
          expect(await starving.locator('.summary').innerText()).toMatch(
            /^task TESTING\/stalled: health STARVING for \d+ s$/,
          )
          expect(await starving.locator('.open-for').innerText()).toMatch(/^\d+ s$/)
          expect(
            await page.evaluate(
              "getComputedStyle(document.querySelector('#incidents tbody tr td.severity')).backgroundColor",
            ),
          ).toBe('rgb(198, 40, 40)')
          // The task's row carries the most severe open incident's mark.
          const taskRow = page.locator('section.service table.tasks tbody tr[data-task-id]').first()
          await expect.poll(() => taskRow.getAttribute('data-incident'), { timeout: 30_000 }).toBe('CRITICAL')
          const markOf = "getComputedStyle(document.querySelector('tr[data-incident] td')).boxShadow"
          expect(await page.evaluate(markOf)).toBe('rgb(198, 40, 40) 4px 0px 0px 0px inset')
          // The panel keeps the column of the services' panels below it: the same left and right edges.
          const edges = (selector: string) =>
            page
              .locator(selector)
              .first()
              .evaluate((el) => {
                const box = el.getBoundingClientRect()
                return [Math.round(box.left), Math.round(box.right)]
              })
          expect(await edges('#incidents')).toEqual(await edges('section.service'))

          // A read key sees the same incidents and no button.
          const reader = await dashboardBehind(browser, gateway.url, READER_KEY)
          pages.push(reader.page)
          await expect.poll(() => reader.page.locator('#incidents tbody tr').count(), { timeout: 60_000 }).toBe(2)
          expect(await reader.page.locator('#incidents button.acknowledge').count()).toBe(0)

          await starving.locator('button.acknowledge').click()
          await expect
            .poll(() => starving.locator('.state').innerText(), { timeout: 30_000 })
            .toBe('acknowledged by desk')
          expect(await starving.locator('button.acknowledge').count()).toBe(0)
          await expect
            .poll(() => reader.page.locator('#incidents tbody tr').first().locator('.state').innerText(), {
              timeout: 30_000,
            })
            .toBe('acknowledged by desk')
          expect(problems).toEqual([])
          expect(reader.problems).toEqual([])
        } finally {
          for (const page of pages)
            await page
              .context()
              .close()
              .catch(() => undefined)
          await gateway?.close()
          await new Promise((resolve) => cloud.close(resolve))
        }
      },
    )
  },
)
