import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, test as base } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { browserFixture, CHROMIUM_MISSING } from '../support/chromium.browser.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { deliverTo, TEST_CONFIG } from '../support/gateway.fixture.js'
import { type Receiver, startReceiver, WEBHOOK_SECRET } from '../support/receiver.process.js'

const test = base.extend<{ browser: Browser }>({ browser: browserFixture })

// The dashboard's deliveries panel: an endpoint's state, its dead letters, and the replay button.
describe.skipIf(CHROMIUM_MISSING !== undefined)(
  `the dashboard's webhook deliveries in Chromium (${driverName})`,
  () => {
    let db: TestDatabase
    let receiver: Receiver
    let gateway: Gateway

    beforeAll(async () => {
      db = await openTestDatabase()
      receiver = await startReceiver()
      const config = loadConfig({
        env: {},
        value: {
          ...TEST_CONFIG,
          webhooks: {
            retrySchedule: ['100ms'],
            endpoints: [
              {
                name: 'ops',
                url: `${receiver.url}/hooks/ops`,
                secret: WEBHOOK_SECRET,
                serviceCodes: ['TESTING'],
                events: ['callback.live_start'],
              },
            ],
          },
        },
      })
      gateway = await startGateway(config, { database: db.database })
    }, 120_000)

    afterAll(async () => {
      await gateway?.close()
      await receiver?.stop()
      await db?.drop()
    })

    test("shows a failing endpoint's dead letters, and replays them with the button", { timeout: 180_000 }, async ({
      browser,
    }) => {
      await receiver.plan('/hooks/ops', [{ status: 500 }, { status: 500 }])
      await deliverTo(gateway, sampleCallbacks(`panel-${Date.now()}`).liveStart as Record<string, string>)
      await expect
        .poll(async () => (await gateway.parts.webhooks.visibleEndpoint('ops', undefined))?.state?.deadLetters, {
          timeout: 30_000,
        })
        .toBe(1)
      const context = await browser.newContext({ viewport: { width: 1440, height: 900 } })
      const page = await context.newPage()
      const problems: string[] = []
      page.on('pageerror', (error) => problems.push(error.message))
      try {
        await page.goto(`${gateway.url}/dashboard`)
        const row = page.locator('#webhooks tr[data-endpoint="ops"]')
        await row.waitFor({ timeout: 60_000 })
        await expect.poll(() => row.locator('.dead').textContent(), { timeout: 30_000 }).toBe('1')
        expect(await row.locator('.state .badge').textContent()).toBe('FAILING')
        expect(await row.locator('.error').textContent()).toBe('HTTP 500')
        await row.locator('button').click()
        await expect.poll(() => row.locator('.replayed').textContent(), { timeout: 30_000 }).toBe('1 put back in line')
        // Read again every 5 s: the replayed delivery is delivered and the endpoint healthy.
        await expect.poll(() => row.locator('.dead').textContent(), { timeout: 60_000 }).toBe('0')
        await expect.poll(() => row.locator('.state .badge').textContent(), { timeout: 60_000 }).toBe('HEALTHY')
        expect((await receiver.received('/hooks/ops')).map((receipt) => receipt.answered)).toEqual([500, 500, 200])
        expect(problems).toEqual([])
      } finally {
        await context.close()
      }
    })
  },
)
