// urql 6 at its defaults (GET queries, graphcache with the shipped possible types and keys, its
// subscription exchange over graphql-ws), walking the graph as a frontend's pages do (issue 11's
// pinned contract: edges, global ids, taskChanged by ids).
import type { Client } from '@urql/core'
import { describe, expect } from 'vitest'
import { driverName } from '../support/database.fixture.js'
import { test } from '../support/gateway.fixture.js'
import { recordingUpdates } from './cache.records.js'
import { TASK_IDS, TASK_PAGE, TASK_WATCH, USER_PAGE } from './page.operations.js'
import { TASK_NOTIFICATIONS, deliverTask, endWatchedTask, fresh } from './page.scenario.js'
import { urqlClient } from './urql.setup.js'

/** A urql client whose graphcache reports what it stores for each page's root field, and warns into a list. */
function recordingClient(url: string) {
  const recorded = recordingUpdates({ Query: ['task', 'node', 'tasks'], Subscription: ['taskChanged'] })
  const warnings: string[] = []
  const methods: string[] = []
  const { client, close } = urqlClient(
    url,
    {
      updates: recorded.updates,
      logger: (severity, message) => (severity === 'debug' ? undefined : warnings.push(message)),
    },
    async (input, init) => {
      methods.push(init?.method ?? 'GET')
      return fetch(input, init)
    },
  )
  return { client, close, entities: recorded.entities, warnings, methods }
}

async function ask(client: Client, query: typeof TASK_PAGE, variables: Record<string, unknown>) {
  const result = await client.query(query, variables).toPromise()
  expect(result.error, JSON.stringify(result.error)).toBeUndefined()
  return result.data
}

async function globalId(client: Client, taskId: string): Promise<string> {
  const ids = (await ask(client, TASK_IDS, { taskIds: [taskId] })).tasks.edges.map((edge: any) => edge.node.id)
  expect(ids, `one task ${taskId}`).toHaveLength(1)
  return ids[0]
}

describe(`urql 6 on the graph (${driverName})`, { timeout: 300_000 }, () => {
  test(
    'a task page with its user and outputs, its notifications ' + 'a page at a time, all normalized in graphcache',
    async ({ gateway, deliver }) => {
      const taskId = fresh('uq-task')
      const userName = fresh('uq-user')
      await deliverTask(deliver, taskId, userName)
      const { client, close, entities, warnings, methods } = recordingClient(gateway.url)
      try {
        const id = await globalId(client, taskId)
        let data = await ask(client, TASK_PAGE, { id, first: 2 })
        expect(data.task).toMatchObject({ id, taskId, userName, user: { id: expect.any(String), userName } })
        expect(data.task.notifications).toMatchObject({
          totalCount: TASK_NOTIFICATIONS,
          pageInfo: { hasNextPage: true },
        })
        while (data.task.notifications.pageInfo.hasNextPage) {
          data = await ask(client, TASK_PAGE, { id, first: 2, after: data.task.notifications.pageInfo.endCursor })
        }
        // relayPagination reads every page fetched as one list.
        const nodes = data.task.notifications.edges.map((edge: any) => edge.node)
        expect(new Set(nodes.map((node: any) => node.id)).size).toBe(TASK_NOTIFICATIONS)
        for (const node of nodes) expect(node).toMatchObject({ taskId, task: { id } })
        expect(new Set(methods)).toEqual(new Set(['GET']))

        const user = data.task.user.id
        expect(entities.get(`Task:${id}`)).toEqual(
          expect.arrayContaining(['taskId', 'user', 'outputs', 'notifications']),
        )
        expect(entities.get(`User:${user}`)).toEqual(expect.arrayContaining(['id', 'userName']))
        expect(data.task.outputs.length).toBeGreaterThan(0)
        for (const output of data.task.outputs)
          expect(entities.get(`Output:${output.id}`)).toEqual(expect.arrayContaining(['id', 'tag', 'task']))
        expect(warnings).toEqual([])
      } finally {
        await close()
      }
    },
  )

  test('a user page, found by node(id), with their tasks a page at a time', async ({ gateway, deliver }) => {
    const userName = fresh('uq-user')
    const taskIds = [fresh('uq-a'), fresh('uq-b'), fresh('uq-c')]
    for (const taskId of taskIds) await deliverTask(deliver, taskId, userName)
    const { client, close, entities, warnings } = recordingClient(gateway.url)
    try {
      const userId = (await ask(client, TASK_PAGE, { id: await globalId(client, taskIds[0] as string), first: 1 })).task
        .user.id
      const first = await ask(client, USER_PAGE, { id: userId, first: 2 })
      expect(first.node).toMatchObject({
        __typename: 'User',
        id: userId,
        userName,
        tasks: { totalCount: 3, pageInfo: { hasNextPage: true } },
      })
      const both = await ask(client, USER_PAGE, { id: userId, first: 2, after: first.node.tasks.pageInfo.endCursor })
      const tasks = both.node.tasks.edges.map((edge: any) => edge.node)
      expect(tasks.map((task: any) => task.taskId).sort()).toEqual([...taskIds].sort())
      for (const task of tasks) {
        expect(task.user.id).toBe(userId)
        expect(entities.get(`Task:${task.id}`)).toEqual(expect.arrayContaining(['taskId', 'status', 'user']))
      }
      expect(entities.get(`User:${userId}`)).toEqual(expect.arrayContaining(['userName', 'tasks']))
      expect(warnings).toEqual([])
    } finally {
      await close()
    }
  })

  test(
    "a subscription to one task's changes through the subscription exchange updates the page that shows it, and no " +
      'other task',
    async ({ gateway, deliver }) => {
      const taskId = fresh('uq-watch')
      const other = fresh('uq-other')
      const userName = fresh('uq-user')
      await deliverTask(deliver, taskId, userName, 'liveStart')
      await deliverTask(deliver, other, userName, 'liveStart')
      const { client, close, entities } = recordingClient(gateway.url)
      try {
        const id = await globalId(client, taskId)
        const shown: string[] = []
        const page = client.query(TASK_PAGE, { id, first: 1 }).subscribe((result) => {
          if (result.data) shown.push(result.data.task.status)
        })
        const events: any[] = []
        const watch = client.subscription(TASK_WATCH, { ids: [id] }).subscribe((result) => {
          if (result.data) events.push(result.data.taskChanged)
        })
        try {
          await endWatchedTask(deliver, { id, taskId, other, events, shown })
          expect(entities.get(`Task:${id}`)).toEqual(expect.arrayContaining(['status']))
        } finally {
          watch.unsubscribe()
          page.unsubscribe()
        }
      } finally {
        await close()
      }
    },
  )
})
