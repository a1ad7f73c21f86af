import { gt, max } from 'drizzle-orm'
import { describe, expect } from 'vitest'
import { sentFields } from '../../src/model/callback.record.js'
import { callbacks } from '../../src/storage/tables/callback.table.js'
import { generateScenario } from '../../src/simulator/session.scenario.js'
import { startSimulator } from '../../src/simulator/simulator.run.js'
import { TaskListClient } from '../../src/work/graph/task-list.client.js'
import { driverName } from '../support/database.fixture.js'
import { ROTATED_SECRET, SECRET, test } from '../support/gateway.fixture.js'

// Two of the fixture gateway's services, signed with the secret each signs with now.
const SERVICES = [
  { serviceCode: 'TESTING', secret: SECRET },
  { serviceCode: 'ROTATING', secret: ROTATED_SECRET },
]
const PLAY = { seed: 4242, sessions: 6, rate: 400 }

describe(`the simulator against a real gateway on ${driverName}`, () => {
  test('delivers a seeded scenario: every callback answered 200 and stored as sent', async ({ gateway, db }) => {
    const [last] = await db.database.db.select({ id: max(callbacks.id) }).from(callbacks)
    const simulator = await startSimulator({ services: SERVICES, gatewayUrl: gateway.url, ...PLAY })
    try {
      const stats = await simulator.done
      const played = simulator.scenario()
      expect(played.callbacks.length).toBeGreaterThan(20)
      expect(stats).toMatchObject({
        finished: true,
        rounds: 1,
        callbacksDue: played.callbacks.length,
        callbacksSent: played.callbacks.length,
        lastFailure: null,
      })
      expect(stats.answers).toEqual({ '200': played.callbacks.length })

      // The scenario is the seed's: the same sessions and callbacks as generating it here (the
      // simulator plays audiences and mishaps unless told not to).
      const again = generateScenario({
        ...PLAY,
        serviceCodes: SERVICES.map((s) => s.serviceCode),
        epochMs: played.epochMs,
        audience: true,
      })
      expect(again.callbacks.map((c) => c.fields)).toEqual(played.callbacks.map((c) => c.fields))

      const taskIds = played.sessions.map((session) => session.taskId)
      const rows = await db.database.db
        .select()
        .from(callbacks)
        .where(gt(callbacks.id, last?.id ?? 0))
        .orderBy(callbacks.id)
      expect(rows).toHaveLength(played.callbacks.length)
      expect(rows.every((row) => row.signature === 'verified' && row.deliveries === 1 && row.method === 'POST')).toBe(
        true,
      )
      const stored = rows.map((row) => ({ ...sentFields(row) }))
      expect(stored).toEqual(played.callbacks.map((c) => c.fields))
      expect(new Set(rows.flatMap((row) => (row.taskId ? [row.taskId] : [])))).toEqual(new Set(taskIds))

      // A vanished session left no end callback behind; the others ended once per output.
      for (const session of played.sessions) {
        const ends = rows.filter((row) => row.taskId === session.taskId && row.type === 1)
        expect(ends).toHaveLength(session.ending === 'VANISHED' ? 0 : session.outputs.length)
      }
      expect(played.sessions.some((session) => session.ending === 'VANISHED')).toBe(true)
    } finally {
      await simulator.stop()
    }
  })

  test('answers task_list with what is live while it plays, and nothing once it is over', async () => {
    const simulator = await startSimulator({ services: SERVICES, seed: 7, sessions: 3, rate: 40 })
    try {
      const client = new TaskListClient({
        services: SERVICES.map((s) => ({
          serviceCode: s.serviceCode,
          secrets: [s.secret],
          verify: 'enforce',
          baseUrl: simulator.url,
        })),
        // A generous timeout: a loaded machine answered a local GET in over a second.
        options: { timeoutMs: 30_000, retries: 0, retryBaseMs: 10, pollIntervalMs: 0, maxBackoffMs: 60_000 },
      })
      const played = simulator.scenario()
      const seen = new Set<string>()
      while (!simulator.stats().finished) {
        for (const { serviceCode } of SERVICES)
          for (const task of (await client.get(serviceCode)).task_list) seen.add(task.id)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      // Every task listed is one that played; a short session may live between two reads on a
      // busy machine, so not every one need have been seen.
      const playedIds = new Set(played.sessions.map((session) => session.taskId))
      expect(seen.size).toBeGreaterThan(0)
      expect([...seen].filter((id) => !playedIds.has(id))).toEqual([])
      expect(simulator.stats()).toMatchObject({ callbacksSent: 0, callbacksDue: played.callbacks.length })
      for (const { serviceCode } of SERVICES)
        expect(await client.get(serviceCode)).toEqual({ ret: 0, task_list: [], user_list: [] })
    } finally {
      await simulator.stop()
    }
  })

  test('stop() ends a looping run early', async ({ gateway }) => {
    const simulator = await startSimulator({
      services: SERVICES,
      gatewayUrl: gateway.url,
      seed: 1,
      sessions: 2,
      rate: 5,
      loop: true,
    })
    await new Promise((resolve) => setTimeout(resolve, 300))
    const stats = await simulator.stop()
    expect(stats.finished).toBe(true)
    expect(stats.callbacksSent).toBeLessThan(simulator.scenario().callbacks.length)
    await expect(simulator.done).resolves.toMatchObject({ finished: true })
  })
})
