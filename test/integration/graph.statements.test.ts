import { afterAll, beforeAll, describe, expect, it } from 'vitest'
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

describe(`a page of tasks costs a bounded number of SQL statements (${driverName})`, () => {
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
})
