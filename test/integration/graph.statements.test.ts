import { sql } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { projectorOf } from '../../src/adapters/http/server.build.js'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/adapters/http/gateway.start.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { send, signFor, TEST_CONFIG } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'

const PAGE = `query($first: Int) {
  tasks(first: $first) {
    totalCount
    edges { cursor node {
      id status author
      outputs { tag format { container } streams { kind bitRate } recordings { fileName } }
      recordings { fileName }
      thumbnails { url }
      notifications(first: 5) { totalCount edges { cursor node { __typename id type receivedAt fields } } }
    } }
  }
}`

const SCALARS = 'query { tasks(first: 10) { edges { node { id status author } } } }'
const SCALARS_IN_FRAGMENTS = `query { tasks(first: 10) { edges { node { ...Keys ... on Task { endReason } } } } }
  fragment Keys on Task { id status author }`
const NESTED = `query { tasks(first: 10) { edges { node { id status author endReason startedAt endedAt
  outputs { tag startedAt format { container } } recordings { fileName createdAt } thumbnails { url receivedAt } } } } }`
const NESTED_IN_FRAGMENT = `query { tasks(first: 10) { edges { node { id ...Outputs } } } }
  fragment Outputs on Task { outputs { tag } }`

describe(`a page of tasks costs a bounded number of SQL statements, reading the columns its selection needs (${driverName})`, () => {
  let db: TestDatabase
  let gateway: Gateway
  let statements: string[] = []

  beforeAll(async () => {
    db = await openTestDatabase({ logger: { logQuery: (query) => statements.push(query) } })
    gateway = await startGateway(loadConfig({ env: {}, value: TEST_CONFIG }), { database: db.database })
    const sessions = Array.from({ length: 60 }, (_, i) => sampleCallbacks(`bounded-${String(i).padStart(3, '0')}`))
    const deliveries = sessions.flatMap((s) => [s.liveStart, s.thumbnail, s.liveEnd, s.archived]) as Array<Record<string, string>>
    for (let i = 0; i < deliveries.length; i += 20) {
      const answers = await Promise.all(deliveries.slice(i, i + 20).map((fields) => send(signFor(gateway, fields))))
      expect(answers.every((answer) => answer.status === 200)).toBe(true)
    }
    await gateway.settle()
    // Everything is folded: stop the projector, so that only the page's own statements are counted.
    await projectorOf(gateway.server).stop()
  }, 120_000)

  afterAll(async () => {
    await gateway?.close()
    await db?.drop()
  })

  const statementsFor = async (first: number) => {
    statements = []
    const answer = await graphql(gateway, PAGE, { first })
    expect(answer.errors, answer.text).toBeUndefined()
    expect(answer.data.tasks.edges).toHaveLength(first)
    expect(answer.data.tasks.edges[0].node.notifications.totalCount).toBe(4)
    return statements.length
  }

  it('the same few statements for 5 tasks as for 50, with outputs, recordings and their last 5 notifications', async () => {
    const small = await statementsFor(5)
    const large = await statementsFor(50)
    // The page, its total, and one batch each for the tasks' notifications and their totals.
    expect(large).toBe(small)
    expect(large).toBeGreaterThanOrEqual(3)
    expect(large).toBeLessThanOrEqual(4)
  })

  const pageStatement = async (query: string) => {
    statements = []
    const answer = await graphql(gateway, query)
    expect(answer.errors, answer.text).toBeUndefined()
    expect(answer.data.tasks.edges).toHaveLength(10)
    const page = statements.filter((statement) => /from "tasks"/.test(statement) && /order by/.test(statement))
    expect(page).toHaveLength(1)
    return { data: answer.data, statement: page[0] as string }
  }

  it('three scalar fields, directly or through fragments, read neither the state nor the node', async () => {
    for (const query of [SCALARS, SCALARS_IN_FRAGMENTS]) {
      const { statement } = await pageStatement(query)
      expect(statement).not.toMatch(/\bstate\b/)
      expect(statement).not.toMatch(/\bnode\b/)
    }
  })

  it('nested fields, directly or through a fragment, read the stored node', async () => {
    for (const query of [NESTED, NESTED_IN_FRAGMENT]) {
      const { statement } = await pageStatement(query)
      expect(statement).toMatch(/\bnode\b/)
    }
  })

  it('scalar columns and the stored node answer alike, and a row written before nodes were is derived from its state', async () => {
    const fromNode = (await pageStatement(NESTED)).data
    const fromColumns = (await pageStatement(SCALARS)).data
    expect(fromColumns.tasks.edges.map((edge: any) => edge.node)).toEqual(
      fromNode.tasks.edges.map(({ node: { id, status, author } }: any) => ({ id, status, author })),
    )
    expect(fromNode.tasks.edges[0].node.outputs[0].startedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    await db.database.db.execute(sql`update tasks set node = null`)
    expect((await pageStatement(NESTED)).data).toEqual(fromNode)
  })
})
