import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { describeOnServer, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { SECRET } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'
import { postCallbackOnce, type ServeProcess, startServeProcess } from '../support/livegate.process.js'

// Issue 41, defect 6: under `serve` with its default workers on a server, a callback answered
// {"ret":0} must be in a list queried right after, whichever worker took either request, and a
// list's totalCount must count the rows its pages show.

/** Posts one signed callback on a connection of its own (so to any worker); its status. */
const post = (url: string, fields: Record<string, string>) => postCallbackOnce(url, fields, SECRET)

type Page = { totalCount: number; edges: Array<{ node: { fields: Record<string, string> } }> }
const STARTS = `query { notifications(filter: { serviceCode: "TESTING", types: [0] }, first: 100) {
  totalCount edges { node { fields } } } }`

describeOnServer('serve on a PostgreSQL server: what was acknowledged is readable at once (issue 41, defect 6)', () => {
  let db: TestDatabase
  let serving: ServeProcess

  beforeAll(async () => {
    db = await openTestDatabase()
    const file = join(mkdtempSync(join(tmpdir(), 'livegate-read-your-writes-')), 'livegate.json')
    writeFileSync(file, JSON.stringify({ port: 0, services: [{ serviceCode: 'TESTING', secrets: [SECRET] }] }))
    serving = await startServeProcess(['--config', file], { ...process.env, DATABASE_URL: db.url as string })
  }, 600_000)

  afterAll(async () => {
    serving?.process.kill('SIGKILL')
    await db?.drop()
  })

  it('a callback answered {"ret":0} is on the next page read, on any worker, and totalCount counts the ' +
    'edges', async () => {
    // Other callbacks keep both workers' group commits busy, so one commits while another is still open.
    let flooding = true
    const flood = Promise.all(
      Array.from({ length: 3 }, async (_, lane) => {
        for (let seq = 0; flooding && seq < 10_000; seq++) {
          const fields = { ...sampleCallbacks(`flood-${lane}`).liveResume, seq: String(seq) } as Record<string, string>
          await post(serving.url, fields)
        }
      }),
    )
    const misses: string[] = []
    try {
      for (let check = 0; check < 40; check++) {
        const taskId = `ack-${check}`
        expect(await post(serving.url, sampleCallbacks(taskId).liveStart as Record<string, string>)).toBe(200)
        const answer = await graphql<{ notifications: Page }>({ url: serving.url }, STARTS)
        expect(answer.errors, answer.text).toBeUndefined()
        const page = answer.data?.notifications as Page
        const seen = page.edges.map((edge) => edge.node.fields.hashed_id)
        if (!seen.includes(taskId)) misses.push(`${taskId} not in [${seen.slice(0, 3).join(', ')}...]`)
        if (page.totalCount !== page.edges.length) misses.push(`totalCount ${page.totalCount}, ${seen.length} edges`)
      }
    } finally {
      flooding = false
      await flood
    }
    expect(misses).toEqual([])
  }, 600_000)
})
