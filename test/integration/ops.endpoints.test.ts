import { randomUUID } from 'node:crypto'
import { describe, expect } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { startGateway } from '../../src/gateway.assembly.js'
import { startSimulator } from '../../src/simulator/simulator.run.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase } from '../support/database.fixture.js'
import { SECRET, send, TEST_CONFIG, test } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'
import { parseMetrics, type Sample } from '../support/metrics.scrape.js'
import { settle, subscribe } from '../support/subscription.client.js'

/** A scrape parsed: the samples, and the declared type of each metric family. */
interface Scrape {
  samples: Sample[]
  types: Map<string, string>
  contentType: string | null
}

async function scrape(baseUrl: string): Promise<Scrape> {
  const response = await fetch(`${baseUrl}/metrics`)
  expect(response.status).toBe(200)
  const text = await response.text()
  const types = new Map<string, string>()
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) types.set(name as string, type as string)
  const samples = parseMetrics(text)
  // Every line is a comment or a sample the parser read: the format is well formed throughout.
  expect(samples).toHaveLength(text.split('\n').filter((line) => line !== '' && !line.startsWith('#')).length)
  return { samples, types, contentType: response.headers.get('content-type') }
}

function value(scraped: Scrape, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = scraped.samples.find(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  )
  return found?.value
}

const NOTIFICATIONS =
  'subscription($filter: NotificationFilter) { notificationReceived(filter: $filter) { __typename } }'
const TASKS = 'subscription { taskChanged { id } }'

describe(`operations endpoints (${driverName})`, () => {
  test('/healthz answers that the process is up', async ({ gateway }) => {
    const answer = await send({ method: 'GET', url: `${gateway.url}/healthz` })
    expect(answer.status).toBe(200)
    expect(answer.body).toEqual({ ok: true })
  })

  test('/readyz answers ready with the database timing, and names no connection detail', async ({ gateway }) => {
    const answer = await send({ method: 'GET', url: `${gateway.url}/readyz` })
    expect(answer.status, answer.text).toBe(200)
    expect(answer.body).toMatchObject({ ready: true, database: { ok: true }, upstream: [] })
    const database = answer.body.database as { latencyMs: number; error?: string }
    expect(database.latencyMs).toBeGreaterThanOrEqual(0)
    expect(database.error).toBeUndefined()
    // The spool's depth when the gateway has one (null otherwise).
    const spool = answer.body.spool as { depth: number } | null
    if (spool !== null) expect(spool.depth).toBeGreaterThanOrEqual(0)
    expect(answer.text).not.toMatch(/postgres(ql)?:\/\/|password|127\.0\.0\.1:\d+/)
  })

  test('/metrics: Prometheus text with the GraphQL histogram by operation, callbacks, and process metrics', async ({
    gateway,
    deliver,
  }) => {
    expect((await graphql(gateway, 'query Probe { __typename }')).status).toBe(200)
    expect((await graphql(gateway, '{ __typename }')).status).toBe(200)
    expect((await deliver(sampleCallbacks(randomUUID()).liveStart as Record<string, string>)).status).toBe(200)

    const scraped = await scrape(gateway.url)
    expect(scraped.contentType).toMatch(/^text\/plain; version=0\.0\.4/)
    expect(scraped.types.get('livegate_graphql_seconds')).toBe('histogram')
    expect(value(scraped, 'livegate_graphql_seconds_count', { operation: 'Probe', type: 'query' })).toBe(1)
    expect(value(scraped, 'livegate_graphql_seconds_bucket', { operation: 'Probe', type: 'query', le: '+Inf' })).toBe(1)
    expect(
      value(scraped, 'livegate_graphql_seconds_count', { operation: 'anonymous', type: 'query' }),
    ).toBeGreaterThanOrEqual(1)
    expect(scraped.types.get('livegate_callbacks_total')).toBe('counter')
    expect(value(scraped, 'livegate_callbacks_total', { type: '0', verdict: 'kept' })).toBeGreaterThanOrEqual(1)
    expect(value(scraped, 'livegate_ingest_seconds_count')).toBeGreaterThanOrEqual(1)
    for (const family of [
      'livegate_ingest_seconds',
      'livegate_spool_depth',
      'livegate_subscriptions',
      'livegate_upstream_poll_seconds',
      'livegate_upstream_errors_total',
    ]) {
      expect(scraped.types.has(family), family).toBe(true)
    }
    expect(value(scraped, 'process_cpu_user_seconds_total')).toBeGreaterThan(0)
    expect(scraped.types.has('nodejs_eventloop_lag_seconds')).toBe(true)
  })

  test('distinct operation names are capped: past the cap they are counted as "other"', async ({ gateway }) => {
    for (let i = 0; i < 210; i++) expect((await graphql(gateway, `query Many${i} { __typename }`)).status).toBe(200)
    const scraped = await scrape(gateway.url)
    const operations = new Set(
      scraped.samples.filter((s) => s.name === 'livegate_graphql_seconds_count').map((s) => s.labels.operation),
    )
    // 200 names, and `anonymous` and `other`, which the cap does not count.
    expect(operations.size).toBeLessThanOrEqual(202)
    expect(operations.has('other')).toBe(true)
    expect(value(scraped, 'livegate_graphql_seconds_count', { operation: 'Many0' })).toBe(1)
  })

  test('the subscriptions gauge rises with an open subscription and falls when it closes', async ({ gateway }) => {
    const gauge = async () => value(await scrape(gateway.url), 'livegate_subscriptions', { field: 'taskChanged' }) ?? 0
    const before = await gauge()
    const subscription = subscribe(gateway.url, TASKS)
    try {
      await settle()
      await expect.poll(gauge, { timeout: 20_000 }).toBe(before + 1)
    } finally {
      await subscription.dispose()
    }
    await expect.poll(gauge, { timeout: 20_000 }).toBe(before)
  })

  test('the subscriptions gauge counts notification subscriptions under their own field', async ({
    gateway,
    deliver,
  }) => {
    const gauge = async () =>
      value(await scrape(gateway.url), 'livegate_subscriptions', { field: 'notificationReceived' }) ?? 0
    const before = await gauge()
    const taskId = randomUUID()
    const subscription = subscribe(gateway.url, NOTIFICATIONS, { filter: { taskIds: [taskId] } })
    try {
      await settle()
      await expect.poll(gauge, { timeout: 20_000 }).toBe(before + 1)
    } finally {
      await subscription.dispose()
    }
    // An idle notification stream ends when its next event wakes it (see the report on the
    // resolver): one matching callback lets it go.
    expect((await deliver(sampleCallbacks(taskId).liveStart as Record<string, string>)).status).toBe(200)
    await expect.poll(gauge, { timeout: 20_000 }).toBe(before)
  })

  test('a gateway of its own: task_list health and poll metrics, then 503 once its database is closed', async () => {
    const own = await openTestDatabase()
    const simulator = await startSimulator({
      services: [{ serviceCode: 'UP', secret: SECRET }],
      seed: 1,
      sessions: 1,
      rate: 1,
    })
    const config = loadConfig({
      env: {},
      value: {
        ...TEST_CONFIG,
        // The database is the fixture's; memory:// only gives the spool a scratch directory.
        database: { dataDir: 'memory://' },
        services: [
          { serviceCode: 'UP', secrets: [SECRET], baseUrl: simulator.url },
          // Nothing listens on port 1: every poll of this code fails at once.
          { serviceCode: 'DOWN', secrets: [SECRET], baseUrl: 'http://127.0.0.1:1' },
        ],
        upstream: { pollIntervalMs: 60_000, retries: 0, timeoutMs: 1000 },
        ops: { readyTimeoutMs: 500 },
      },
    })
    const gateway = await startGateway(config, { database: own.database })
    try {
      await expect
        .poll(
          async () =>
            value(await scrape(gateway.url), 'livegate_upstream_errors_total', {
              service_code: 'DOWN',
              kind: 'NETWORK',
            }),
          { timeout: 10_000 },
        )
        .toBe(1)
      await expect
        .poll(
          async () =>
            value(await scrape(gateway.url), 'livegate_upstream_poll_seconds_count', {
              service_code: 'UP',
              outcome: 'ok',
            }),
          { timeout: 10_000 },
        )
        .toBe(1)
      const scraped = await scrape(gateway.url)
      expect(value(scraped, 'livegate_upstream_poll_seconds_count', { service_code: 'DOWN', outcome: 'NETWORK' })).toBe(
        1,
      )
      expect(value(scraped, 'livegate_upstream_errors_total', { service_code: 'UP' })).toBeUndefined()

      const ready = await send({ method: 'GET', url: `${gateway.url}/readyz` })
      expect(ready.status, ready.text).toBe(200)
      const upstream = ready.body.upstream as Array<{
        serviceCode: string
        healthy: boolean | null
        lastSuccessAt: string | null
      }>
      expect(upstream.map((u) => u.serviceCode)).toEqual(['UP', 'DOWN'])
      expect(upstream[0]).toMatchObject({ serviceCode: 'UP', healthy: true })
      expect(Date.parse(upstream[0]?.lastSuccessAt ?? '')).toBeGreaterThan(Date.now() - 60_000)
      expect(upstream[0]).toMatchObject({ stale: false, consecutiveFailures: 0 })
      expect(upstream[1]).toEqual({
        serviceCode: 'DOWN',
        healthy: false,
        stale: true,
        consecutiveFailures: 1,
        lastSuccessAt: null,
      })

      await own.database.close()
      const down = await send({ method: 'GET', url: `${gateway.url}/readyz` })
      expect(down.status, down.text).toBe(503)
      expect(down.body).toMatchObject({
        ready: false,
        database: { ok: false },
        upstream: [
          { serviceCode: 'UP', healthy: null },
          { serviceCode: 'DOWN', healthy: null },
        ],
      })
      expect((down.body.database as { error: string }).error).toMatch(/^[A-Z0-9_]+$/)
      expect(down.text).not.toMatch(/postgres(ql)?:\/\/|password|livegate_test_|127\.0\.0\.1:\d+/)
      // The process itself is still up.
      expect((await send({ method: 'GET', url: `${gateway.url}/healthz` })).status).toBe(200)
    } finally {
      await gateway.close()
      await simulator.stop()
      await own.drop()
    }
  })
})
