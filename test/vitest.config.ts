import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import DurationSequencer from './support/duration.sequencer.js'

export default defineConfig({
  root: fileURLToPath(new URL('..', import.meta.url)),
  resolve: {
    // type-graphql and Apollo require graphql's CommonJS build; our ESM imports must get the same
    // copy, or graphql refuses to mix types from two module instances.
    alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }],
  },
  test: {
    projects: [
      // Pure and fast: threads that keep their modules from one file to the next, since importing the
      // schema and the kinds table anew for each file cost the tier more than its tests.
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'], pool: 'threads', isolate: false } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/clients/**/*.test.ts', 'test/browser/**/*.test.ts'],
        },
      },
    ],
    // Integration files each open their own database; two cores, so two workers.
    pool: 'forks',
    maxWorkers: 2,
    // The longest files first, by what each took on the server, so that both workers end together.
    sequence: { sequencer: DurationSequencer },
    // Limits against a hang, not measures: a busy machine (load 15 to 35 on two cores) takes 40 s and more to open
    // an embedded database and a minute to start Chromium.
    testTimeout: 300_000,
    hookTimeout: 300_000,
    // expect.poll waits for an outcome; its default second is a wall-clock bet a busy machine loses.
    expect: { poll: { timeout: 20_000, interval: 100 } },
  },
})
