import { randomUUID } from 'node:crypto'
import { execute, parse } from 'graphql'
import { describe, expect, it } from 'vitest'
import { buildGraphqlSchema } from '../../src/adapters/graphql/pipeline/schema.build.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName } from '../support/database.fixture.js'
import { type GatewayFixtures, test } from '../support/gateway.fixture.js'
import { metricValue, scrapeMetrics } from '../support/metrics.scrape.js'
import { type Subscribed, subscribe } from '../support/subscription.client.js'

const WIDE = `subscription($filter: NotificationFilter, $after: String) {
  notificationReceived(filter: $filter, after: $after) { __typename id taskId cursor fields }
}`
const NARROW = `subscription($filter: NotificationFilter) { notificationReceived(filter: $filter) { type fields } }`

type Event = { notificationReceived: { cursor?: string; fields: Record<string, string> } }

/** Results executed and messages written since the gateway started, from its /metrics. */
async function counts(url: string): Promise<{ results: number; messages: number }> {
  const samples = await scrapeMetrics(url)
  return {
    results: metricValue(samples, 'livegate_subscription_results_total'),
    messages: metricValue(samples, 'livegate_subscription_messages_total'),
  }
}

/** Type 15 notifications of one task, each distinct by its `seq`. */
const resume = (taskId: string, seq: string) =>
  ({ ...sampleCallbacks(taskId).liveResume, seq }) as Record<string, string>

/**
 * Sends probes until every subscriber has one (every subscription is in place), then one more
 * event and waits until every subscriber has it: events are delivered in commit order, so
 * nothing sent before is still on its way, and counts taken now are settled.
 */
async function settleAll(
  deliver: GatewayFixtures['deliver'],
  taskId: string,
  subscribers: Subscribed<Event>[],
): Promise<void> {
  let sent = 0
  await expect
    .poll(
      async () => {
        expect((await deliver(resume(taskId, `probe-${sent++}`))).status).toBe(200)
        return Math.min(...subscribers.map((s) => s.events.length))
      },
      { timeout: 15_000, interval: 300 },
    )
    .toBeGreaterThan(0)
  const fence = `fence-${randomUUID()}`
  expect((await deliver(resume(taskId, fence))).status).toBe(200)
  await expect
    .poll(() => subscribers.every((s) => s.events.at(-1)?.notificationReceived.fields.seq === fence), {
      timeout: 15_000,
    })
    .toBe(true)
}

describe(`subscribers of one operation share each event's result (${driverName})`, () => {
  test('one execution per event per distinct operation, one message per subscriber, the same payload for all', async ({
    gateway,
    deliver,
  }) => {
    const taskId = `shared-${randomUUID()}`
    // Twelve on one filter and three on another: their filters differ only in variables of the
    // subscription field, so all fifteen share one result. Four select other fields: one more.
    const wide = [
      ...Array.from({ length: 12 }, () => subscribe<Event>(gateway.url, WIDE, { filter: { taskIds: [taskId] } })),
      ...Array.from({ length: 3 }, () =>
        subscribe<Event>(gateway.url, WIDE, { filter: { taskIds: [taskId], types: [15] } }),
      ),
    ]
    const narrow = Array.from({ length: 4 }, () =>
      subscribe<Event>(gateway.url, NARROW, { filter: { taskIds: [taskId] } }),
    )
    const all = [...wide, ...narrow]
    try {
      await settleAll(deliver, taskId, all)
      const before = await counts(gateway.url)
      const seen = all.map((s) => s.events.length)
      const events = 5
      for (let i = 0; i < events; i++) expect((await deliver(resume(taskId, `event-${i}`))).status).toBe(200)
      await expect
        .poll(() => all.every((s, i) => s.events.length === (seen[i] as number) + events), { timeout: 15_000 })
        .toBe(true)

      const after = await counts(gateway.url)
      expect(after.results - before.results, 'executions: one per event per distinct operation').toBe(events * 2)
      expect(after.messages - before.messages, 'messages: one per event per subscriber').toBe(events * all.length)
      expect(all.every((s) => s.errors.length === 0)).toBe(true)
      const lastOf = (s: Subscribed<Event>) => s.events.slice(-events)
      for (const s of wide) expect(lastOf(s)).toEqual(lastOf(wide[0] as Subscribed<Event>))
      for (const s of narrow) expect(lastOf(s)).toEqual(lastOf(narrow[0] as Subscribed<Event>))
      expect(lastOf(wide[0] as Subscribed<Event>).map((e) => e.notificationReceived.fields.seq)).toEqual([
        'event-0',
        'event-1',
        'event-2',
        'event-3',
        'event-4',
      ])
    } finally {
      await Promise.all(all.map((s) => s.dispose()))
    }
  })

  test('a resuming subscriber replays on its own, then shares the live results', async ({ gateway, deliver }) => {
    const taskId = `shared-${randomUUID()}`
    const live = subscribe<Event>(gateway.url, WIDE, { filter: { taskIds: [taskId] } })
    let resumed: Subscribed<Event> | undefined
    try {
      await settleAll(deliver, taskId, [live])
      const cursor = live.events.at(-1)?.notificationReceived.cursor
      const seen = live.events.length
      const missed = 3
      for (let i = 0; i < missed; i++) expect((await deliver(resume(taskId, `missed-${i}`))).status).toBe(200)
      await expect.poll(() => live.events.length, { timeout: 15_000 }).toBe(seen + missed)

      const before = await counts(gateway.url)
      resumed = subscribe<Event>(gateway.url, WIDE, { filter: { taskIds: [taskId] }, after: cursor })
      await expect.poll(() => resumed?.events.length, { timeout: 15_000 }).toBe(missed)
      const replayed = await counts(gateway.url)
      expect(replayed.results - before.results, 'the replay is executed for the resuming subscriber alone').toBe(missed)

      const later = 2
      for (let i = 0; i < later; i++) expect((await deliver(resume(taskId, `later-${i}`))).status).toBe(200)
      await expect
        .poll(() => [live.events.length, resumed?.events.length], { timeout: 15_000 })
        .toEqual([seen + missed + later, missed + later])
      const after = await counts(gateway.url)
      expect(after.results - replayed.results, 'live events: one execution for both').toBe(later)
      expect(after.messages - replayed.messages).toBe(later * 2)
      expect(resumed.events).toEqual(live.events.slice(seen))
    } finally {
      await live.dispose()
      await resumed?.dispose()
    }
  })
})

describe('a subscription event executes at once', () => {
  // A result that is a promise makes every subscriber of the operation wait on it apiece; the
  // fan-out writes bytes computed at once only when the execution is synchronous.
  it('the subscription fields resolve to their event without a promise', async () => {
    const schema = await buildGraphqlSchema()
    const event = {
      id: 'Tm90aWZpY2F0aW9uOjE',
      kind: 'LIVE_RESUME',
      type: 15,
      serviceCode: 'TESTING',
      taskId: 't1',
      receivedAt: new Date(0),
      cursor: 'c',
      status: 1,
    }
    const result = execute({
      schema,
      document: parse(`subscription { notificationReceived { __typename id type taskId cursor } }`),
      rootValue: event,
      contextValue: {},
    })
    expect(result).not.toBeInstanceOf(Promise)
    expect(result).toEqual({
      data: {
        notificationReceived: {
          __typename: 'LiveResumeNotification',
          id: event.id,
          type: 15,
          taskId: 't1',
          cursor: 'c',
        },
      },
    })
  })
})
