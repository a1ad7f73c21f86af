import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { databaseEnv, openTestDatabase, type TestDatabase, describeOnServer } from '../support/database.fixture.js'
import { SECRET, send, signFor } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'
import { metricValue, scrapeMetrics } from '../support/metrics.scrape.js'
import { startServeProcess } from '../support/livegate.process.js'
import { subscribe } from '../support/subscription.client.js'

/** Starts `livegate serve` as its own process on the given database. */
const serve = (configFile: string, db: TestDatabase) =>
  startServeProcess(['--config', configFile], { ...process.env, ...databaseEnv(db), LOG_LEVEL: 'info' })

// Two processes can share only a server: PGlite is one process's own database.
describeOnServer('two gateway processes on one PostgreSQL server share events', () => {
  let db: TestDatabase
  const gateways: Array<{ process: ChildProcess; url: string }> = []

  beforeAll(async () => {
    db = await openTestDatabase()
    const configFile = join(mkdtempSync(join(tmpdir(), 'livegate-instances-')), 'livegate.json')
    writeFileSync(configFile, JSON.stringify({ port: 0, services: [{ serviceCode: 'TESTING', secrets: [SECRET] }] }))
    gateways.push(...(await Promise.all([serve(configFile, db), serve(configFile, db)])))
  }, 600_000)

  afterAll(async () => {
    for (const gateway of gateways) gateway.process.kill('SIGKILL')
    await db?.drop()
  })

  it('a callback posted to one reaches a subscriber on the other, exactly once', async () => {
    const [a, b] = gateways as unknown as [{ url: string }, { url: string }]
    const taskId = `instances-${Date.now()}`
    type Event = { notificationReceived: { id: string; taskId: string; fields: Record<string, string> } }
    const operation =
      `subscription($t: String!) { ` + `notificationReceived(filter: { taskIds: [$t] }) { id ` + `taskId fields } }`
    const onB = subscribe<Event>(b.url, operation, { t: taskId })
    const onA = subscribe<Event>(a.url, operation, { t: taskId })
    try {
      let seq = 0
      const post = (url: string) =>
        send(
          signFor(
            { url } as never,
            { ...sampleCallbacks(taskId).liveResume, seq: String(seq++) } as Record<string, string>,
          ),
        )
      // Probe until both subscriptions are in place, then post the one that counts to A only.
      await expect
        .poll(
          async () => {
            await post(a.url)
            return Math.min(onA.events.length, onB.events.length)
          },
          { timeout: 20_000, interval: 500 },
        )
        .toBeGreaterThan(0)
      // A probe may still be on its way to B (more so on a busy machine): rather than wait a
      // fixed time for stragglers, the one that counts is told apart by its seq.
      const countedSeq = String(seq)
      expect((await post(a.url)).status).toBe(200)
      const idsOf = (events: Event[]) => events.map((e) => e.notificationReceived.id)
      const isCounted = (event: Event) => event.notificationReceived.fields.seq === countedSeq
      await expect.poll(() => onB.events.some(isCounted), { timeout: 20_000 }).toBe(true)
      await expect.poll(() => onA.events.some(isCounted), { timeout: 20_000 }).toBe(true)
      await new Promise((resolve) => setTimeout(resolve, 500))
      const ids = idsOf(onB.events)
      expect(onB.events.filter(isCounted)).toHaveLength(1)
      // Exactly once on B, and what B has is what A has, in A's order.
      expect(new Set(ids).size).toBe(ids.length)
      const onAIds = idsOf(onA.events)
      // B subscribed first, so a probe may reach B before A's subscription was in place: from the
      // first event A has on, B has what A has.
      const shared = ids.slice(
        Math.max(
          0,
          ids.findIndex((id) => onAIds.includes(id)),
        ),
      )
      expect(shared.map((id) => onAIds.indexOf(id))).toEqual(
        shared.map((id) => onAIds.indexOf(id)).sort((x, y) => x - y),
      )
      expect(shared.filter((id) => !onAIds.includes(id))).toEqual([])
    } finally {
      await onA.dispose()
      await onB.dispose()
    }
  }, 300_000)

  it('one process folds the log while the other stands by, and ' +
    'when the folder is killed the other takes over', async () => {
    const [a, b] = gateways as unknown as [
      { process: ChildProcess; url: string },
      { process: ChildProcess; url: string },
    ]
    const stamp = Date.now()
    const start = (url: string, taskId: string) =>
      send(signFor({ url } as never, sampleCallbacks(taskId).liveStart as Record<string, string>))
    const statusOn = async (url: string, taskIds: string[]) => {
      const answer = await graphql(
        { url },
        'query($t: [String!]) { tasks(filter: { taskIds: $t }, first: 50) { edges { node { status } } } }',
        { t: taskIds },
      )
      return (answer.data?.tasks.edges ?? []).filter(
        (edge: { node: { status: string } }) => edge.node.status === 'LIVE',
      ).length
    }
    // Callbacks into both processes: each commit rings the doorbell on both.
    const burst = Array.from({ length: 20 }, (_, i) => `standby-${stamp}-${i}`)
    for (const [i, taskId] of burst.entries())
      expect((await start(i % 2 === 0 ? a.url : b.url, taskId)).status).toBe(200)
    await expect.poll(() => statusOn(a.url, burst), { timeout: 20_000 }).toBe(burst.length)
    const folded = async (url: string) =>
      metricValue(await scrapeMetrics(url), 'livegate_projector_passes_total', { outcome: 'folded' })
    const [onA, onB] = [await folded(a.url), await folded(b.url)]
    expect(onA + onB).toBeGreaterThan(0)
    // Kill the one that folded more (the folder, unless they swapped at a tick), then only the other is left to fold.
    const [folder, other] = onA >= onB ? [a, b] : [b, a]
    folder.process.kill('SIGKILL')
    const late = `standby-${stamp}-late`
    expect((await start(other.url, late)).status).toBe(200)
    await expect.poll(() => statusOn(other.url, [late]), { timeout: 20_000 }).toBe(1)
  }, 300_000)
})
