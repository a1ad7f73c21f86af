import { existsSync } from 'node:fs'
import { type Browser, chromium } from 'playwright-core'

/** Debian's Chromium, which the browser tests drive through playwright-core. */
export const CHROMIUM = '/usr/bin/chromium'

// Without the background-networking flags Chromium calls Google's hosts at every start, which
// this machine's closed network refuses (and which would be requests the test did not make).
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

/**
 * Why the browser tests are skipped: a developer without Chromium may skip; CI must run them, so there a missing
 * browser fails.
 */
export const CHROMIUM_MISSING =
  !existsSync(CHROMIUM) && !process.env.CI
    ? `skipped: no Chromium at ${CHROMIUM} (apt-get install chromium; .ci/run installs it)`
    : undefined

/** A file-scoped vitest fixture: one headless Chromium for the file's tests. */
export const browserFixture: [
  ({}: object, use: (browser: Browser) => Promise<void>) => Promise<void>,
  { scope: 'file' },
] = [
  async ({}, use) => {
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS })
    await use(browser)
    await browser.close()
  },
  { scope: 'file' },
]
