import type { Browser, Page } from 'playwright-core'
import { describe, expect } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { upsertListedFiles } from '../../src/storage/graph/recording.statements.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { browserFixture, CHROMIUM_MISSING } from '../support/chromium.browser.js'
import { driverName } from '../support/database.fixture.js'
import { deliverTo, ROTATED_SECRET, SECRET, TEST_CONFIG, test } from '../support/gateway.fixture.js'

const KEY = 'dash-recordings-reader-51d0'
const browserTest = test.extend<{ browser: Browser }>({ browser: browserFixture })

describe.skipIf(CHROMIUM_MISSING !== undefined)(
  `the dashboard's recordings in Chromium (${driverName})${CHROMIUM_MISSING ? ` ${CHROMIUM_MISSING}` : ''}`,
  () => {
    browserTest(
      'the newest recordings with play links, views and where each was seen; the unannounced and the missing flagged',
      { timeout: 300_000 },
      async ({ browser, db }) => {
        let gateway: Gateway | undefined
        let page: Page | undefined
        try {
          const config = loadConfig({
            env: {},
            value: {
              ...TEST_CONFIG,
              services: [
                { serviceCode: 'TESTING', secrets: [SECRET] },
                { serviceCode: 'ROTATING', secrets: [ROTATED_SECRET, SECRET] },
              ],
              apiKeys: [{ name: 'wall', key: KEY, serviceCodes: ['TESTING'] }],
              archive: { graceMs: 1000 },
            },
          })
          gateway = await startGateway(config, { database: db.database })
          const now = String(Math.floor(Date.now() / 1000))
          // `kept` is archived and announced; `lost` ended and nothing came; ROTATING's is another tenant's.
          const play = async (taskId: string, code: string, archived: boolean) => {
            const samples = sampleCallbacks(taskId, code)
            for (const fields of [samples.liveStart, samples.liveEnd, ...(archived ? [samples.archived] : [])]) {
              expect(
                (await deliverTo(gateway as Gateway, { ...fields, created_at: now } as Record<string, string>)).status,
              ).toBe(200)
            }
          }
          await play('kept', 'TESTING', true)
          await play('lost', 'TESTING', false)
          await play('other', 'ROTATING', true)
          // A file the archive lists that no type 2 announced.
          const listed = {
            createdAt: new Date(),
            duration: 12,
            width: 640,
            height: 360,
            userName: 'bob',
            description: null,
            location: null,
          }
          await upsertListedFiles(
            db.database.db,
            'TESTING',
            [{ fileName: 'silent.mp4', url: 'http://vod.example/silent.mp4', views: 42, likes: 1, ...listed }],
            new Date(),
          )

          const context = await browser.newContext({ viewport: { width: 1440, height: 1100 } })
          page = await context.newPage()
          const problems: string[] = []
          page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
          page.on('console', (message) => {
            if (message.type() === 'error' && !/401 \(Unauthorized\)/.test(message.text()))
              problems.push(message.text())
          })
          await page.goto(`${gateway.url}/dashboard`)
          await page.locator('#notice').filter({ hasText: 'needs an API key' }).waitFor({ timeout: 60_000 })
          await page.locator('#api-key').fill(KEY)
          await page.locator('#key-form button[type="submit"]').click()

          const rows = page.locator('#recordings tbody tr')
          await expect.poll(() => rows.count(), { timeout: 60_000 }).toBe(2)
          const kept = page.locator('#recordings tbody tr', { hasText: 'kept.mp4' })
          expect(await kept.locator('td.file a').getAttribute('href')).toBe('http://vod.example/kept.mp4')
          expect(await kept.locator('td.subject').innerText()).toBe('TESTING / kept')
          expect(await kept.locator('td.seen-in').innerText()).toBe('callback')
          expect(await kept.getAttribute('data-unannounced')).toBeNull()
          const silent = page.locator('#recordings tbody tr', { hasText: 'silent.mp4' })
          expect(await silent.getAttribute('data-unannounced')).toBe('true')
          expect(await silent.locator('td.seen-in').innerText()).toBe('archive list (never announced)')
          expect(await silent.locator('td.views').innerText()).toBe('42')
          expect(await silent.locator('td.user').innerText()).toBe('bob')
          // `lost` is told missing after the grace; `kept` never is, and nothing of ROTATING shows.
          const missing = page.locator('#recordings .missing-list li')
          await expect
            .poll(() => missing.allInnerTexts(), { timeout: 60_000 })
            .toEqual([expect.stringMatching(/^TESTING \/ lost \(alice\): no recording, told /)])
          expect(await page.locator('#recordings .no-missing').isHidden()).toBe(true)
          expect(await page.locator('#recordings').innerText()).not.toContain('other')
          // A panel in the services' column: the same left and right edges as theirs.
          const shown = page
          const edges = (selector: string) =>
            shown
              .locator(selector)
              .first()
              .evaluate((el) => {
                const box = el.getBoundingClientRect()
                return [Math.round(box.left), Math.round(box.right)]
              })
          expect(await edges('#recordings')).toEqual(await edges('section.service'))
          // A late type 2 takes `lost` off the list: it was told missing once, and is no longer.
          const late = { ...sampleCallbacks('lost', 'TESTING').archived, created_at: now } as Record<string, string>
          expect((await deliverTo(gateway, late)).status).toBe(200)
          await expect.poll(() => missing.count(), { timeout: 60_000 }).toBe(0)
          expect(await page.locator('#recordings .no-missing').isVisible()).toBe(true)
          await expect.poll(() => rows.count(), { timeout: 60_000 }).toBe(3)
          expect(problems).toEqual([])
        } finally {
          await page
            ?.context()
            .close()
            .catch(() => undefined)
          await gateway?.close()
        }
      },
    )
  },
)
