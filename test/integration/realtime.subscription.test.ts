import { randomUUID } from 'node:crypto'
import { describe, expect } from 'vitest'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName } from '../support/database.fixture.js'
import { test } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'
import { subscribe } from '../support/subscription.client.js'
import { toGlobalId } from '../../src/adapters/graphql/global.id.js'

const NOTIFICATIONS = `subscription($filter: NotificationFilter, $after: String) {
  notificationReceived(filter: $filter, after: $after) {
    __typename id type taskId cursor fields
    ... on LiveResumeNotification { status }
  }
}`

type Event = {
  notificationReceived: {
    __typename: string
    id: string
    type: number
    taskId: string
    cursor: string
    fields: Record<string, string>
    status?: string
  }
}
const isProbe = (event: Event) => event.notificationReceived.fields.seq?.startsWith('probe')
// A notification's place in commit order: the row id in its cursor (ids are opaque global ids).
const rowIdOf = (cursor: string) => Number(Buffer.from(cursor, 'base64url').toString().split(':').at(-1))

/** Type 15 notifications of one task, each its own event (its own signed time and `seq`). */
function resumes(taskId: string, count: number, from = 0): Array<Record<string, string>> {
  return Array.from(
    { length: count },
    (_, i) =>
      ({ ...sampleCallbacks(taskId).liveResume, seq: String(from + i), status: String((from + i) % 2) }) as Record<
        string,
        string
      >,
  )
}

describe(`notificationReceived over graphql-ws (${driverName})`, () => {
  test('pushes each matching callback once it is committed, in order, and nothing else', async ({
    gateway,
    deliver,
  }) => {
    const taskId = `rt-${randomUUID()}`
    const other = `rt-${randomUUID()}`
    const subscription = subscribe<Event>(gateway.url, NOTIFICATIONS, { filter: { taskIds: [taskId] } })
    try {
      // The first delivery proves the subscription is in place before the rest are sent.
      const [probe, ...rest] = resumes(taskId, 4)
      await expect
        .poll(
          async () => {
            await deliver({ ...probe!, seq: `probe-${Date.now()}` })
            return subscription.events.length
          },
          { timeout: 10_000, interval: 300 },
        )
        .toBeGreaterThan(0)
      for (const fields of rest) expect((await deliver(fields)).status).toBe(200)
      expect((await deliver(resumes(other, 1)[0]!)).status).toBe(200)
      await expect.poll(() => subscription.events.filter((e) => !isProbe(e)).length, { timeout: 10_000 }).toBe(3)
      await new Promise((resolve) => setTimeout(resolve, 200))
      const events = subscription.events.filter((e) => !isProbe(e)).map((e) => e.notificationReceived)
      expect(events).toHaveLength(3)
      expect(events.map((e) => e.taskId)).toEqual([taskId, taskId, taskId])
      expect(events.every((e) => e.__typename === 'LiveResumeNotification' && e.type === 15)).toBe(true)
      const ids = events.map((e) => rowIdOf(e.cursor))
      expect([...ids].sort((a, b) => a - b)).toEqual(ids)
      // Its cursor is the notifications connection's: the same edge cursor a query hands out.
      const listed = await graphql(
        gateway,
        `query($t: String!) { notifications(filter: { taskIds: [$t] }, first: 1) { edges { cursor } } }`,
        { t: taskId },
      )
      expect(listed.data.notifications.edges[0].cursor).toBe(events.at(-1)?.cursor)
    } finally {
      await subscription.dispose()
    }
  })

  test('a subscription without a cursor is handed none of the callbacks kept while nobody was subscribed', async ({
    gateway,
    deliver,
  }) => {
    const taskId = `rt-${randomUUID()}`
    // Nobody listens: the gateway does not read the log for these, and must not hand them out later.
    const before = resumes(taskId, 5)
    for (const fields of before) expect((await deliver(fields)).status).toBe(200)
    const subscription = subscribe<Event>(gateway.url, NOTIFICATIONS, { filter: { taskIds: [taskId] } })
    try {
      await expect
        .poll(
          async () => {
            await deliver({ ...resumes(taskId, 1, 50)[0]!, seq: `probe-${Date.now()}` })
            return subscription.events.length
          },
          { timeout: 10_000, interval: 300 },
        )
        .toBeGreaterThan(0)
      const after = resumes(taskId, 3, 100)
      for (const fields of after) expect((await deliver(fields)).status).toBe(200)
      await expect
        .poll(() => subscription.events.filter((e) => !isProbe(e)).length, { timeout: 10_000 })
        .toBe(after.length)
      expect(subscription.events.filter((e) => !isProbe(e)).map((e) => e.notificationReceived.fields.seq)).toEqual([
        '100',
        '101',
        '102',
      ])
    } finally {
      await subscription.dispose()
    }
  })

  test('resumes after a cursor: a burst sent while disconnected arrives exactly once, then live ones follow', async ({
    gateway,
    deliver,
  }) => {
    const taskId = `rt-${randomUUID()}`
    const first = subscribe<Event>(gateway.url, NOTIFICATIONS, { filter: { taskIds: [taskId] } })
    let cursor: string
    try {
      await expect
        .poll(
          async () => {
            await deliver({ ...resumes(taskId, 1)[0]!, seq: `probe-${Date.now()}` })
            return first.events.length
          },
          { timeout: 10_000, interval: 300 },
        )
        .toBeGreaterThan(0)
      cursor = first.events.at(-1)!.notificationReceived.cursor
    } finally {
      await first.dispose()
    }
    const seenBefore = new Set(first.events.map((e) => e.notificationReceived.id))

    // Disconnected: a burst lands.
    const burst = resumes(taskId, 40, 100)
    const answers = await Promise.all(burst.map((fields) => deliver(fields)))
    expect(answers.every((a) => a.status === 200)).toBe(true)

    // Reconnect with the last cursor while more keep arriving, so some land between the server
    // joining the live stream and its replay query: the seam.
    const seam = resumes(taskId, 30, 200)
    const seamDelivered = (async () => {
      for (let i = 0; i < seam.length; i += 3) {
        const answers = await Promise.all(seam.slice(i, i + 3).map((fields) => deliver(fields)))
        expect(answers.every((a) => a.status === 200)).toBe(true)
      }
    })()
    const second = subscribe<Event>(gateway.url, NOTIFICATIONS, { filter: { taskIds: [taskId] }, after: cursor })
    try {
      await seamDelivered
      // Probe with later events until one arrives after everything else.
      await expect
        .poll(
          async () => {
            await deliver({ ...resumes(taskId, 1, 900)[0]!, seq: `tail-${Date.now()}` })
            return second.events.filter((e) => e.notificationReceived.type === 15).length
          },
          { timeout: 15_000, interval: 500 },
        )
        .toBeGreaterThanOrEqual(burst.length + seam.length + 1)
      const ids = second.events.map((e) => e.notificationReceived.id)
      expect(new Set(ids).size, 'no event twice').toBe(ids.length)
      expect(
        ids.some((id) => seenBefore.has(id)),
        'nothing from before the cursor',
      ).toBe(false)
      const numbers = second.events.map((e) => rowIdOf(e.notificationReceived.cursor))
      expect([...numbers].sort((a, b) => a - b)).toEqual(numbers)
      // Nothing missed: every notification of the task stored after the cursor, up to the last
      // one received, was received (exactly once, as checked above).
      const cursorId = rowIdOf(cursor)
      const lastId = Math.max(...numbers)
      const stored = await graphql(
        gateway,
        `query($t: String!) { notifications(filter: { taskIds: [$t] }, first: 500) { edges { cursor } } }`,
        { t: taskId },
      )
      const expected = stored.data.notifications.edges
        .map((e: { cursor: string }) => rowIdOf(e.cursor))
        .filter((id: number) => id > cursorId && id <= lastId)
      expect([...numbers].sort((a, b) => a - b)).toEqual(expected.sort((a: number, b: number) => a - b))
    } finally {
      await second.dispose()
    }
  })

  test('a bad cursor or filter ends the subscription with BAD_USER_INPUT, and the socket stays usable', async ({
    gateway,
  }) => {
    const bad = subscribe(gateway.url, NOTIFICATIONS, { after: 'not-a-cursor' })
    try {
      await expect.poll(() => bad.errors.length, { timeout: 20_000 }).toBeGreaterThan(0)
      expect(JSON.stringify(bad.errors)).toContain('BAD_USER_INPUT')
    } finally {
      await bad.dispose()
    }
  })
})

describe(`taskChanged over graphql-ws (${driverName})`, () => {
  test('pushes the re-folded task on each change that matches the filter', async ({ gateway, deliver }) => {
    const taskId = `rt-${randomUUID()}`
    const samples = sampleCallbacks(taskId)
    const all = subscribe<{ taskChanged: { taskId: string; status: string; endReason: string | null } }>(
      gateway.url,
      `subscription { taskChanged { taskId status endReason } }`,
    )
    const ended = subscribe<{
      taskChanged: { taskId: string; status: string; endReason: string | null; outputs: unknown[] }
    }>(
      gateway.url,
      `subscription { taskChanged(filter: { status: [ENDED] }) { taskId status endReason outputs { tag } } }`,
    )
    try {
      await expect
        .poll(
          async () => {
            await deliver({ ...samples.thumbnail, file_name: `probe-${Date.now()}.jpg` } as Record<string, string>)
            return all.events.length
          },
          { timeout: 10_000, interval: 300 },
        )
        .toBeGreaterThan(0)
      await deliver(samples.liveStart as Record<string, string>)
      await deliver(samples.liveEnd as Record<string, string>)
      await expect.poll(() => ended.events.length, { timeout: 10_000 }).toBeGreaterThan(0)
      const mine = all.events.map((e) => e.taskChanged).filter((t) => t.taskId === taskId)
      expect(mine.at(-1)).toEqual({ taskId, status: 'ENDED', endReason: 'USER_STOPPED' })
      expect(mine.some((t) => t.status === 'LIVE')).toBe(true)
      expect(ended.events.map((e) => e.taskChanged).filter((t) => t.taskId === taskId)).toEqual([
        { taskId, status: 'ENDED', endReason: 'USER_STOPPED', outputs: [{ tag: 'tcp_output_live_only' }] },
      ])
    } finally {
      await all.dispose()
      await ended.dispose()
    }
  })
})

describe(`subscriptions a page needs: one task, one user (${driverName})`, () => {
  test('taskChanged follows tasks by global id, hashed_id, user id or user name prefix, and nothing else', async ({
    gateway,
    deliver,
  }) => {
    const run = randomUUID().slice(0, 8)
    const [taskA, taskB] = [`page-a-${run}`, `page-b-${run}`]
    const [ann, bob] = [`ann-${run}`, `bob-${run}`]
    type Changed = { taskChanged: { taskId: string; userName: string | null } }
    const follow = (filter: Record<string, unknown>) =>
      subscribe<Changed>(
        gateway.url,
        'subscription($filter: TaskFilter) { taskChanged(filter: $filter) { taskId userName } }',
        { filter },
      )
    const subscriptions = {
      byId: follow({ ids: [toGlobalId('Task', 'TESTING', taskA)] }),
      byTaskId: follow({ taskIds: [taskB] }),
      byUser: follow({ userIds: [toGlobalId('User', 'TESTING', ann)] }),
      byPrefix: follow({ userName: `BOB-${run.toUpperCase()}` }),
    }
    try {
      expect(
        (await deliver({ ...sampleCallbacks(taskA).liveStart, author: ann } as Record<string, string>)).status,
      ).toBe(200)
      expect(
        (await deliver({ ...sampleCallbacks(taskB).liveStart, author: bob } as Record<string, string>)).status,
      ).toBe(200)
      // Each change of either task is an event; keep changing both until every subscriber saw one.
      let n = 0
      await expect
        .poll(
          async () => {
            for (const task of [taskA, taskB])
              await deliver({ ...sampleCallbacks(task).thumbnail, file_name: `probe-${n++}.jpg` } as Record<
                string,
                string
              >)
            return Math.min(...Object.values(subscriptions).map((s) => s.events.length))
          },
          { timeout: 15_000, interval: 300 },
        )
        .toBeGreaterThan(0)
      const seen = (name: keyof typeof subscriptions) =>
        new Set(subscriptions[name].events.map((e) => `${e.taskChanged.taskId}/${e.taskChanged.userName}`))
      expect(seen('byId')).toEqual(new Set([`${taskA}/${ann}`]))
      expect(seen('byTaskId')).toEqual(new Set([`${taskB}/${bob}`]))
      expect(seen('byUser')).toEqual(new Set([`${taskA}/${ann}`]))
      expect(seen('byPrefix')).toEqual(new Set([`${taskB}/${bob}`]))
    } finally {
      await Promise.all(Object.values(subscriptions).map((s) => s.dispose()))
    }
  })

  test('notificationReceived filters by task ids, kinds and user', async ({ gateway, deliver }) => {
    const run = randomUUID().slice(0, 8)
    const [taskA, taskB] = [`note-a-${run}`, `note-b-${run}`]
    const ann = `ann-${run}`
    type Received = { notificationReceived: { kind: string; taskId: string | null; userName: string | null } }
    const follow = (filter: Record<string, unknown>) =>
      subscribe<Received>(
        gateway.url,
        'subscription($filter: NotificationFilter) { notificationReceived(filter: $filter) { kind taskId userName } }',
        { filter },
      )
    const subscriptions = {
      byTask: follow({ taskIds: [taskA] }),
      byKind: follow({ kinds: ['CLIENT_DISCONNECT'], taskIds: [taskA, taskB] }),
      byUser: follow({ userName: ann }),
    }
    try {
      let n = 0
      await expect
        .poll(
          async () => {
            for (const task of [taskA, taskB]) {
              await deliver({ ...sampleCallbacks(task).thumbnail, file_name: `probe-${n++}.jpg` } as Record<
                string,
                string
              >)
              await deliver({
                ...sampleCallbacks(task).clientDisconnect,
                hashed_id: task,
                username: task === taskA ? ann : `someone-${run}`,
                session_duration: String(n++),
              } as Record<string, string>)
            }
            return Math.min(...Object.values(subscriptions).map((s) => s.events.length))
          },
          { timeout: 15_000, interval: 300 },
        )
        .toBeGreaterThan(0)
      const events = (name: keyof typeof subscriptions) => subscriptions[name].events.map((e) => e.notificationReceived)
      expect(events('byTask').every((e) => e.taskId === taskA)).toBe(true)
      expect(events('byTask').every((e) => e.kind === 'THUMBNAIL' || e.kind === 'CLIENT_DISCONNECT')).toBe(true)
      expect(events('byKind').every((e) => e.kind === 'CLIENT_DISCONNECT')).toBe(true)
      expect(events('byKind').every((e) => e.taskId === taskA || e.taskId === taskB)).toBe(true)
      expect(events('byUser').every((e) => e.userName === ann && e.kind === 'CLIENT_DISCONNECT')).toBe(true)
    } finally {
      await Promise.all(Object.values(subscriptions).map((s) => s.dispose()))
    }
  })
})
