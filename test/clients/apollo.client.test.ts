// Apollo Client 4 at its defaults, with the shipped possibleTypes and a graphql-ws link, walking the
// graph as a frontend's pages do (issue 11's pinned contract: edges, global ids, taskChanged by ids).
import { describe, expect } from 'vitest'
import { driverName } from '../support/database.fixture.js'
import { test } from '../support/gateway.fixture.js'
import { apolloClient } from './apollo.setup.js'
import { apolloEntries } from './cache.records.js'
import { TASK_IDS, TASK_PAGE, TASK_WATCH, USER_PAGE } from './page.operations.js'
import { TASK_NOTIFICATIONS, deliverTask, endWatchedTask, fresh } from './page.scenario.js'

type Client = ReturnType<typeof apolloClient>['client']

async function globalId(client: Client, taskId: string): Promise<string> {
  const { data } = await client.query({ query: TASK_IDS, variables: { taskIds: [taskId] } })
  const ids = data.tasks.edges.map((edge: any) => edge.node.id)
  expect(ids, `one task ${taskId}`).toHaveLength(1)
  return ids[0]
}

const ref = (id: string) => ({ __ref: id })

describe(`Apollo Client 4 on the graph (${driverName})`, { timeout: 300_000 }, () => {
  test(
    'a task page with its user and outputs, its notifications ' + 'paged by fetchMore, all normalized in the cache',
    async ({ gateway, deliver }) => {
      const taskId = fresh('ac-task')
      const userName = fresh('ac-user')
      await deliverTask(deliver, taskId, userName)
      const { client, close } = apolloClient(gateway.url)
      try {
        const id = await globalId(client, taskId)
        const page = client.watchQuery({ query: TASK_PAGE, variables: { id, first: 2 } })
        const watching = page.subscribe({})
        try {
          const first = await client.query({ query: TASK_PAGE, variables: { id, first: 2 } })
          const task = first.data.task
          expect(task).toMatchObject({ id, taskId, userName, user: { id: expect.any(String), userName } })
          expect(task.outputs.length).toBeGreaterThan(0)
          expect(task.notifications).toMatchObject({ totalCount: TASK_NOTIFICATIONS, pageInfo: { hasNextPage: true } })
          expect(task.notifications.edges).toHaveLength(2)

          let pageInfo = task.notifications.pageInfo
          while (pageInfo.hasNextPage) {
            const more = await page.fetchMore({ variables: { after: pageInfo.endCursor } })
            pageInfo = more.data.task.notifications.pageInfo
          }
          // relayStylePagination appended each page to the one list the watching page shows.
          const shown = () =>
            ((page.getCurrentResult().data as any)?.task.notifications.edges ?? []).map((edge: any) => edge.node)
          await expect.poll(() => shown().length, { timeout: 15_000 }).toBe(TASK_NOTIFICATIONS)
          const nodes = shown()
          expect(new Set(nodes.map((node: any) => node.id)).size).toBe(TASK_NOTIFICATIONS)
          for (const node of nodes)
            expect(node).toMatchObject({ taskId, task: { id }, kind: expect.stringMatching(/^[A-Z_]+$/) })

          const cached = client.cache.extract() as Record<string, any>
          const user = task.user.id
          expect(cached[`Task:${id}`]).toMatchObject({ taskId, user: ref(`User:${user}`) })
          expect(cached[`User:${user}`]).toMatchObject({ id: user, userName })
          for (const output of task.outputs) {
            expect(cached[`Task:${id}`].outputs).toContainEqual(ref(`Output:${output.id}`))
            expect(cached[`Output:${output.id}`]).toMatchObject({ id: output.id, task: ref(`Task:${id}`) })
          }
          expect(Object.keys(apolloEntries(cached, 'Output')).length).toBe(task.outputs.length)
        } finally {
          watching.unsubscribe()
        }
      } finally {
        await close()
      }
    },
  )

  test('a user page, found by node(id), with their tasks paged by fetchMore', async ({ gateway, deliver }) => {
    const userName = fresh('ac-user')
    const taskIds = [fresh('ac-a'), fresh('ac-b'), fresh('ac-c')]
    for (const taskId of taskIds) await deliverTask(deliver, taskId, userName)
    const { client, close } = apolloClient(gateway.url)
    try {
      const { data } = await client.query({
        query: TASK_PAGE,
        variables: { id: await globalId(client, taskIds[0] as string), first: 1 },
      })
      const userId = data.task.user.id
      const page = client.watchQuery({ query: USER_PAGE, variables: { id: userId, first: 2 } })
      const watching = page.subscribe({})
      try {
        const first = await client.query({ query: USER_PAGE, variables: { id: userId, first: 2 } })
        expect(first.data.node).toMatchObject({
          __typename: 'User',
          id: userId,
          userName,
          tasks: { totalCount: 3, pageInfo: { hasNextPage: true } },
        })
        await page.fetchMore({ variables: { after: first.data.node.tasks.pageInfo.endCursor } })
        const shown = () =>
          ((page.getCurrentResult().data as any)?.node.tasks.edges ?? []).map((edge: any) => edge.node)
        await expect.poll(() => shown().length, { timeout: 15_000 }).toBe(taskIds.length)
        const tasks = shown()
        expect(tasks.map((task: any) => task.taskId).sort()).toEqual([...taskIds].sort())
        for (const task of tasks) expect(task.user).toEqual({ __typename: 'User', id: userId })
        const cached = client.cache.extract() as Record<string, any>
        expect(cached[`User:${userId}`]).toMatchObject({ id: userId, userName })
        for (const task of tasks)
          expect(cached[`Task:${task.id}`]).toMatchObject({ taskId: task.taskId, user: ref(`User:${userId}`) })
      } finally {
        watching.unsubscribe()
      }
    } finally {
      await close()
    }
  })

  test(
    "a subscription to one task's changes over graphql-ws " + 'updates the page that shows it, and no other task',
    async ({ gateway, deliver }) => {
      const taskId = fresh('ac-watch')
      const other = fresh('ac-other')
      const userName = fresh('ac-user')
      await deliverTask(deliver, taskId, userName, 'liveStart')
      await deliverTask(deliver, other, userName, 'liveStart')
      const { client, close } = apolloClient(gateway.url)
      try {
        const id = await globalId(client, taskId)
        const shown: string[] = []
        const page = client.watchQuery({ query: TASK_PAGE, variables: { id, first: 1 } }).subscribe({
          next: (result) => {
            if (result.data) shown.push((result.data as any).task.status)
          },
        })
        const events: any[] = []
        const watch = client.subscribe({ query: TASK_WATCH, variables: { ids: [id] } }).subscribe({
          next: (result) => {
            if (result.data) events.push(result.data.taskChanged)
          },
        })
        try {
          await endWatchedTask(deliver, { id, taskId, other, events, shown })
          expect((client.cache.extract() as Record<string, any>)[`Task:${id}`]).toMatchObject({ status: 'ENDED' })
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
