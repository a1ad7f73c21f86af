// Apollo Client 4 and urql 6 at their defaults, on a real gateway fed by signed callbacks, with
// the operations the repository ships (schema/client/operations.ts). What the graph's edges and
// global ids add is tested in apollo.client.test.ts and urql.client.test.ts.
import { randomUUID } from 'node:crypto'
import { type TypedDocumentNode, gql } from '@apollo/client'
import { describe, expect, vi } from 'vitest'
import { RecentNotificationsDocument } from '../../schema/client/operations.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName } from '../support/database.fixture.js'
import { test } from '../support/gateway.fixture.js'
import { apolloClient } from './apollo.setup.js'
import { apolloEntries, recordingUpdates } from './cache.records.js'
import { urqlClient } from './urql.setup.js'

// Every type of notification the samples carry about a task (the disconnect names a user only).
const TASK_TYPES = [
  'ArchivedNotification',
  'LiveEndNotification',
  'LiveResumeNotification',
  'LiveStartNotification',
  'ThumbnailNotification',
]

type Notified = { notificationReceived: { __typename: string; id: string; type: number; taskId: string | null } }

const NOTIFIED: TypedDocumentNode<Notified, { after: string | null }> = gql`
  subscription Notified($after: String) {
    notificationReceived(after: $after) {
      ... on Notification { __typename id type taskId }
    }
  }
`

describe(`stock GraphQL clients at their defaults (${driverName})`, { timeout: 300_000 }, () => {
  test('urql sends a query as GET, with no header of its own beyond its accept, and the gateway answers it', async ({
    gateway,
    deliver,
  }) => {
    const taskId = `kit-${randomUUID()}`
    for (const fields of Object.values(sampleCallbacks(taskId))) expect((await deliver(fields)).status).toBe(200)
    const methods: string[] = []
    const recorded = recordingUpdates({ Query: ['notifications'] })
    const warnings: string[] = []
    const { client, close } = urqlClient(
      gateway.url,
      {
        updates: recorded.updates,
        logger: (severity, message) => (severity === 'debug' ? undefined : warnings.push(message)),
      },
      async (input, init) => {
        methods.push(init?.method ?? 'GET')
        return fetch(input, init)
      },
    )
    try {
      const result = await client.query(RecentNotificationsDocument, { first: 50 }).toPromise()
      expect(result.error).toBeUndefined()
      expect(methods).toEqual(['GET'])
      const nodes = (result.data?.notifications.edges ?? [])
        .map((edge) => edge.node)
        .filter((node) => node.taskId === taskId)
      expect(nodes.map((node) => node.__typename).sort()).toEqual(TASK_TYPES)
      // The fragment on the Notification interface matched each type: graphcache knows the possible types.
      for (const node of nodes)
        expect(node).toMatchObject({ id: expect.any(String), type: expect.any(Number), receivedAt: expect.any(String) })
      // Each notification is a record of its own, keyed as the shipped keys say; nothing unkeyed was warned of.
      for (const node of nodes)
        expect(recorded.entities.get(`${node.__typename}:${node.id}`), node.__typename).toEqual(
          expect.arrayContaining(['id', 'type', 'taskId']),
        )
      expect(warnings).toEqual([])
    } finally {
      await close()
    }
  })

  test(
    'Apollo Client with the shipped possibleTypes reads fragments on an interface; without them it gets bare ' +
      '__typename nodes',
    async ({ gateway, deliver }) => {
      const taskId = `kit-${randomUUID()}`
      for (const fields of Object.values(sampleCallbacks(taskId))) expect((await deliver(fields)).status).toBe(200)
      const warned = vi.spyOn(console, 'warn').mockImplementation(() => {})
      const shipped = apolloClient(gateway.url)
      const bare = apolloClient(gateway.url, { possibleTypes: false })
      try {
        const { data } = await shipped.client.query({ query: RecentNotificationsDocument, variables: { first: 50 } })
        const nodes = (data?.notifications.edges ?? [])
          .map((edge) => edge.node)
          .filter((node) => node.taskId === taskId)
        expect(nodes.map((node) => node.__typename).sort()).toEqual(TASK_TYPES)
        const cached = shipped.client.cache.extract() as Record<string, unknown>
        for (const node of nodes)
          expect(apolloEntries(cached, node.__typename)[`${node.__typename}:${node.id}`]).toMatchObject({
            type: node.type,
            taskId,
          })

        // The failure the shipped file prevents: the fragment's fields are silently missing.
        const without = await bare.client
          .query({ query: RecentNotificationsDocument, variables: { first: 50 } })
          .catch((error: unknown) => ({ data: undefined, error }))
        const bareNodes = (without.data?.notifications.edges ?? []).map((edge) => edge.node as Record<string, unknown>)
        expect(bareNodes.some((node) => node.taskId === taskId)).toBe(false)
        const missing = warned.mock.calls.filter((call) => String(call[0]).includes('missing `possibleTypes`'))
        expect(missing.map((call) => call.slice(1, 3))).toContainEqual([
          'fragment `NotificationSummary`',
          'Notification',
        ])
      } finally {
        warned.mockRestore()
        await shipped.close()
        await bare.close()
      }
    },
  )

  test(
    'Apollo Client subscribes over its graphql-ws link, resuming after a cursor: the replay comes normalized into ' +
      'its cache',
    async ({ gateway, deliver }) => {
      const { client, close } = apolloClient(gateway.url)
      try {
        const { data } = await client.query({ query: RecentNotificationsDocument, variables: { first: 1 } })
        const after = data?.notifications.pageInfo.endCursor ?? null
        const taskId = `kit-${randomUUID()}`
        for (const fields of Object.values(sampleCallbacks(taskId))) expect((await deliver(fields)).status).toBe(200)
        const seen: Array<Notified['notificationReceived']> = []
        const subscription = client.subscribe({ query: NOTIFIED, variables: { after } }).subscribe({
          next: (result) => {
            if (result.data) seen.push(result.data.notificationReceived)
          },
        })
        try {
          await expect
            .poll(() => seen.filter((node) => node.taskId === taskId).length, { timeout: 15_000 })
            .toBe(TASK_TYPES.length)
        } finally {
          subscription.unsubscribe()
        }
        const cached = client.cache.extract() as Record<string, unknown>
        for (const node of seen.filter((each) => each.taskId === taskId))
          expect(cached[`${node.__typename}:${node.id}`]).toMatchObject({ taskId })
      } finally {
        await close()
      }
    },
  )
})
