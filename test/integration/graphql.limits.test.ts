import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { toGlobalId } from '../../src/adapters/graphql/global.id.js'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { MAX_INDEXED_TEXT_BYTES } from '../../src/model/stored.limits.js'
import { incidents, type NewIncidentRow } from '../../src/storage/tables/incident.table.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { deliverTo, TEST_CONFIG } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'

// What one read may cost and list, against a gateway whose maxCost is small enough to be reached
// by the nesting a client can write: every list is costed and bounded per parent, and every id
// the API hands out is taken back.
const MAX_COST = 5000
const PER_TASK = 200

describe(`limits of one read: lists per parent, costs, ids (${driverName})`, { timeout: 120_000 }, () => {
  let db: TestDatabase
  let gateway: Gateway
  const now = String(Math.floor(Date.now() / 1000))
  // The longest name the intake keeps (MAX_INDEXED_TEXT_BYTES of UTF-8): its id runs past a thousand characters.
  const longName = `${'é'.repeat((MAX_INDEXED_TEXT_BYTES - 4) / 2)}.mp4`

  beforeAll(async () => {
    db = await openTestDatabase()
    const value = { ...TEST_CONFIG, graphql: { maxCost: MAX_COST } }
    gateway = await startGateway(loadConfig({ env: {}, value }), { database: db.database })
    for (const taskId of ['task-q', 'task-p']) {
      const samples = sampleCallbacks(taskId)
      for (const fields of [samples.liveStart, samples.archived])
        expect((await deliverTo(gateway, { ...fields, created_at: now } as Record<string, string>)).status).toBe(200)
    }
    const long = sampleCallbacks('task-long').archived
    const answer = await deliverTo(gateway, { ...long, created_at: now, file_name: longName } as Record<string, string>)
    expect(answer.status).toBe(200)
    // Q's incidents first, then P's: every one of P's is newer than every one of Q's.
    const at = new Date()
    const rows = (taskId: string): NewIncidentRow[] =>
      Array.from({ length: PER_TASK }, () => ({
        rule: 'thin',
        severity: 'WARNING',
        state: 'RESOLVED',
        serviceCode: 'TESTING',
        taskId,
        signal: 'task.viewers',
        summary: 'few viewers',
        startedAt: at,
        openedAt: at,
        resolvedAt: at,
        resolution: 'cleared',
      }))
    await db.database.db.insert(incidents).values(rows('task-q'))
    await db.database.db.insert(incidents).values(rows('task-p'))
  })

  afterAll(async () => {
    await gateway?.close()
    await db?.drop()
  })

  it("lists each task's own newest incidents on a page, whichever task's are newer", async () => {
    const answer = await graphql(
      gateway,
      '{ tasks(first: 5, filter: { taskIds: ["task-p", "task-q"] }) { edges { node { taskId incidents { id } } } } }',
    )
    expect(answer.errors, answer.text).toBeUndefined()
    const counts = Object.fromEntries(
      (answer.data.tasks.edges as Array<{ node: { taskId: string; incidents: unknown[] } }>).map(({ node }) => [
        node.taskId,
        node.incidents.length,
      ]),
    )
    expect(counts).toEqual({ 'task-p': 100, 'task-q': 100 })
  })

  it('counts every list in the cost: a list nested in the items of a list is refused under maxCost', async () => {
    const id = toGlobalId('Task', 'TESTING', 'task-p')
    const read = (selection: string) => graphql(gateway, `query($id: ID!) { task(id: $id) { ${selection} } }`, { id })
    for (const list of ['incidents', 'recordings']) {
      const once = await read(`${list} { id }`)
      expect(once.errors, once.text).toBeUndefined()
      const nested = await read(`${list} { task { ${list} { id } } }`)
      const said = nested.text.slice(0, 300)
      expect(nested.status, said).toBe(400)
      expect(nested.errors?.[0]?.extensions?.code, said).toBe('QUERY_TOO_COSTLY')
    }
  })

  it('takes back the id of a recording whose file name is as long as the intake keeps', async () => {
    const answer = await graphql(gateway, '{ recordings(first: 10) { edges { node { id fileName } } } }')
    expect(answer.errors, answer.text).toBeUndefined()
    const edges = answer.data.recordings.edges as Array<{ node: { id: string; fileName: string } }>
    const long = edges.find((edge) => edge.node.fileName.startsWith('é'))?.node
    expect(long?.id.length).toBeGreaterThan(1300)
    const again = await graphql(gateway, 'query($id: ID!) { node(id: $id) { id ... on Recording { fileName } } }', {
      id: long?.id,
    })
    expect(again.errors, again.text).toBeUndefined()
    expect(again.data.node).toEqual(long)
  })
})
