import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { send, signFor, TEST_CONFIG } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'

// Every edge of the graph on one page: each must be read in batches, never once per item.
const TASKS = `query($first: Int) {
  tasks(first: $first) {
    totalCount
    edges { cursor node {
      id taskId status userName
      user { id userName }
      outputs { id tag format { container } streams { kind bitRate } recordings { fileName } task { id } }
      recordings { fileName }
      thumbnails { imageUrl }
      notifications(first: 5) { totalCount edges { cursor node { __typename id kind type receivedAt fields task { id }
        user { id } } } }
    } }
  }
}`

const USERS = `query($first: Int) {
  users(first: $first) {
    totalCount
    edges { node {
      id userName
      tasks(first: 3) { totalCount edges { node { id status user { id } outputs { id task { id } } } } }
    } }
  }
}`

const NOTIFICATIONS = `query($first: Int) {
  notifications(first: $first) {
    totalCount
    edges { node { id kind task { id taskId user { id } } user { id userName } } }
  }
}`

const NODES = `query($ids: [ID!]!) {
  nodes(ids: $ids) { __typename id ... on Task { user { id } } ... on Output { outputTask: task { id } } ... on
    Notification { task { id } } }
}`

// A read of the log after a position: the hub's tail (no page here reads after a position).
const isLogTail = (statement: string) =>
  /from "callbacks" where \("callbacks"\."xid", "callbacks"\."id"\) >/.test(statement)

describe(`a page costs a bounded number of SQL statements, whatever its size (${driverName})`, () => {
  let db: TestDatabase
  let gateway: Gateway
  let statements: string[] = []

  beforeAll(async () => {
    db = await openTestDatabase({ logger: { logQuery: (query) => statements.push(query) } })
    gateway = await startGateway(loadConfig({ env: {}, value: TEST_CONFIG }), { database: db.database })
    // Sixty sessions by sixty users: pages of users and of notifications reach as many tasks.
    const sessions = Array.from({ length: 60 }, (_, i) => {
      const s = sampleCallbacks(`bounded-${String(i).padStart(3, '0')}`) as Record<string, Record<string, string>>
      const author = `user-${String(i).padStart(3, '0')}`
      return [{ ...s.liveStart, author }, s.thumbnail, s.liveEnd, { ...s.archived, author }] as Array<
        Record<string, string>
      >
    })
    const deliveries = sessions.flat()
    for (let i = 0; i < deliveries.length; i += 20) {
      const answers = await Promise.all(deliveries.slice(i, i + 20).map((fields) => send(signFor(gateway, fields))))
      expect(answers.every((answer) => answer.status === 200)).toBe(true)
    }
    await gateway.settle()
    // Everything is folded: stop the projector, so that only the page's own statements are counted.
    await gateway.parts.projector.stop()
  }, 120_000)

  afterAll(async () => {
    await gateway?.close()
    await db?.drop()
  })

  // The page's own statements. Background work of the gateway (the hub's reads and its channel
  // probe, a timer's statement) may fall into any one request: the page runs three times, and the
  // fewest statements it took are its own (a page that reads per item costs more every time).
  const statementsFor = async (query: string, variables: Record<string, unknown>, check: (data: any) => void) => {
    const counts: number[] = []
    for (let run = 0; run < 3; run++) {
      statements = []
      const answer = await graphql(gateway, query, variables)
      expect(answer.errors, answer.text).toBeUndefined()
      check(answer.data)
      counts.push(statements.filter((statement) => !isLogTail(statement)).length)
    }
    return Math.min(...counts)
  }

  it('tasks with their user, outputs, recordings and last 5 notifications (each with its task and user)', async () => {
    const check = (first: number) => (data: any) => {
      expect(data.tasks.edges).toHaveLength(first)
      const task = data.tasks.edges[0].node
      expect(task.notifications.totalCount).toBe(4)
      expect(task.user.userName).toBe(task.userName)
      expect(task.outputs.every((output: { task: { id: string } }) => output.task.id === task.id)).toBe(true)
      expect(
        task.notifications.edges.every((edge: { node: { task: { id: string } } }) => edge.node.task.id === task.id),
      ).toBe(true)
    }
    const small = await statementsFor(TASKS, { first: 5 }, check(5))
    const large = await statementsFor(TASKS, { first: 50 }, check(50))
    // The page, its total, one batch each for the users, the recordings (the catalogue's), the
    // notifications, their totals, and the notifications' tasks (the page reads only the columns
    // it shows, so it does not prime them).
    expect(large).toBe(small)
    expect(large).toBeLessThanOrEqual(7)
  })

  it('users with a page of their tasks, each task with its user and outputs', async () => {
    const check = (first: number) => (data: any) => {
      expect(data.users.edges).toHaveLength(first)
      for (const { node } of data.users.edges) {
        expect(node.tasks.totalCount).toBe(1)
        expect(node.tasks.edges[0].node.user.id).toBe(node.id)
      }
    }
    const small = await statementsFor(USERS, { first: 5 }, check(5))
    const large = await statementsFor(USERS, { first: 50 }, check(50))
    // The page, its total, one batch for the users' tasks and one for their totals.
    expect(large).toBe(small)
    expect(large).toBeLessThanOrEqual(4)
  })

  it('notifications with their task (and its user) and their user', async () => {
    const check = (first: number) => (data: any) => {
      expect(data.notifications.edges).toHaveLength(first)
      for (const { node } of data.notifications.edges) expect(node.task.taskId).toMatch(/^bounded-/)
    }
    const small = await statementsFor(NOTIFICATIONS, { first: 5 }, check(5))
    const large = await statementsFor(NOTIFICATIONS, { first: 50 }, check(50))
    // The page, its total, one batch for the tasks and at most two for the users (the
    // notifications' own, then those of tasks whose notifications on the page name none).
    expect(large).toBe(small)
    expect(large).toBeLessThanOrEqual(5)
  })

  it('nodes by id: one statement per kind of node, however many ids', async () => {
    const page = await graphql(
      gateway,
      `{ tasks(first: 50) { edges { node { id outputs { id } notifications(first: 1) { edges { node { id } } } } } } }`,
    )
    const tasks = page.data.tasks.edges.map((edge: any) => edge.node)
    const idsOf = (n: number) =>
      tasks.slice(0, n).flatMap((task: any) => [task.id, task.outputs[0].id, task.notifications.edges[0].node.id])
    const check = (n: number) => (data: any) => {
      expect(data.nodes).toHaveLength(n * 3)
      expect(data.nodes.map((node: { __typename: string }) => node.__typename).slice(0, 3)).toEqual([
        'Task',
        'Output',
        expect.stringMatching(/Notification$/),
      ])
    }
    const small = await statementsFor(NODES, { ids: idsOf(5) }, check(5))
    const large = await statementsFor(NODES, { ids: idsOf(30) }, check(30))
    expect(large).toBe(small)
    expect(large).toBeLessThanOrEqual(4)
  })
})
