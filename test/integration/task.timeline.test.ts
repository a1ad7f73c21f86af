import { createHash } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { toGlobalId } from '../../src/adapters/graphql/global.id.js'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { acknowledgeIncident, openIncident, resolveIncident } from '../../src/storage/alerts/incident.statements.js'
import { upsertListedFiles } from '../../src/storage/graph/recording.statements.js'
import { createSamplePartitions } from '../../src/storage/history/sample.partitions.js'
import { finishAction, recordAction } from '../../src/storage/outbound/action.statements.js'
import { appendWebhookEvents } from '../../src/storage/outbound/webhook.statements.js'
import { taskSamples } from '../../src/storage/tables/audience.table.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { deliverTo, SECRET, TEST_CONFIG } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'

const KEYS = { a: 'timeline-key-a', b: 'timeline-key-b' }
const bearer = (key: string) => ({ authorization: `Bearer ${key}` })
const TASK = 'timeline-task'
const ID = toGlobalId('Task', 'TL_A', TASK)

const LINE = `query Line($id: ID!, $first: Int, $after: String, $kinds: [TimelineKind!]) {
  task(id: $id) { timeline(first: $first, after: $after, kinds: $kinds) {
    totalCount pageInfo { hasNextPage endCursor }
    edges { cursor node { at kind source summary subject { __typename id } } }
  } }
}`

interface Entry {
  at: string
  kind: string
  source: string
  summary: string
  subject: { __typename: string; id: string } | null
}

// One task's story told through every part livegate keeps it in: callbacks sent over HTTP and folded by the
// gateway; samples, derived events, incidents, actions and listed files written by storage's own statements; the
// webhook deliveries the gateway's outbox makes of them, to an endpoint that refuses every attempt.
describe(`Task.timeline (${driverName})`, () => {
  let db: TestDatabase
  let gateway: Gateway
  const t0 = Date.now() - 10 * 60_000
  const at = (seconds: number) => new Date(t0 + seconds * 1000)

  beforeAll(async () => {
    db = await openTestDatabase()
    const config = loadConfig({
      env: {},
      value: {
        ...TEST_CONFIG,
        services: [
          { serviceCode: 'TL_A', secrets: [SECRET] },
          { serviceCode: 'TL_B', secrets: [SECRET] },
        ],
        apiKeys: [
          { name: 'a', key: KEYS.a, serviceCodes: ['TL_A'] },
          { name: 'b', sha256: createHash('sha256').update(KEYS.b).digest('hex'), serviceCodes: ['TL_B'] },
        ],
        webhooks: {
          retrySchedule: ['100ms'],
          endpoints: [
            {
              name: 'closed',
              url: 'http://127.0.0.1:9/hooks',
              secret: 'whsec_dGltZWxpbmUtdGVzdC1zZWNyZXQtMDEyMzQ1Njc4OQ==',
              serviceCodes: '*',
              events: ['task.*'],
            },
          ],
        },
      },
    })
    gateway = await startGateway(config, { database: db.database })
    const samples = sampleCallbacks(TASK, 'TL_A')
    const { liveStart, liveResume, archived, liveEnd } = samples as Record<string, Record<string, string>>
    for (const fields of [liveStart, liveResume, { ...liveResume, status: '1' }, archived, liveEnd])
      expect((await deliverTo(gateway, fields as Record<string, string>)).status).toBe(200)
    const database = db.database.db
    await createSamplePartitions(database, t0)
    const viewers = [5, 6, 6, 7, 6, 2, 3, 3]
    await database
      .insert(taskSamples)
      .values(
        viewers.map((n, i) => ({ serviceCode: 'TL_A', taskId: TASK, at: at(5 + i * 5), viewers: n, outputs: [] })),
      )
    await appendWebhookEvents(database, [
      {
        type: 'task.health_changed',
        serviceCode: 'TL_A',
        taskId: TASK,
        occurredAt: at(12),
        facts: { from: 'HEALTHY', to: 'STARVING', reason: 'its input bytes did not grow' },
      },
      {
        type: 'task.callback_missing',
        serviceCode: 'TL_A',
        taskId: TASK,
        occurredAt: at(50),
        facts: { kind: 'LIVE_START', graceMs: 1000, reason: 'listed live with no type 0 within the grace' },
      },
    ])
    const incident = await openIncident(database, {
      rule: 'starving',
      severity: 'WARNING',
      state: 'OPEN',
      serviceCode: 'TL_A',
      taskId: TASK,
      signal: 'task.health',
      summary: 'input stalled',
      startedAt: at(12),
      openedAt: at(14),
    })
    if (!incident) throw new Error('no incident opened')
    await acknowledgeIncident(database, incident.id, { by: 'a', keyName: 'a', note: null }, at(16), undefined)
    await resolveIncident(database, incident.id, at(30), 'cleared')
    const { row: action } = await recordAction(
      database,
      {
        kind: 'SEND_MESSAGE',
        serviceCode: 'TL_A',
        taskId: TASK,
        text: 'hello',
        argsHash: 'h',
        keyScope: 'a',
        requestedBy: 'a',
        state: 'PENDING',
        requestedAt: at(40),
      },
      at(0),
    )
    await finishAction(database, action.id, {
      state: 'SUCCEEDED',
      ret: 0,
      message: null,
      attempts: 1,
      finishedAt: at(41),
    })
    const file = (name: string) => ({
      fileName: name,
      createdAt: at(1),
      duration: 10,
      width: null,
      height: null,
      userName: 'alice',
      description: null,
      url: null,
      location: null,
      views: null,
      likes: null,
    })
    await upsertListedFiles(database, 'TL_A', [file(`${TASK}.flv`)], at(60))
  }, 300_000)

  afterAll(async () => {
    await gateway?.close()
    await db?.drop()
  })

  const line = async (variables: Record<string, unknown>, key = KEYS.a) => {
    const answer = await graphql(gateway, LINE, { id: ID, ...variables }, { headers: bearer(key) })
    expect(answer.errors).toBeUndefined()
    return answer.data.task?.timeline as
      | { totalCount: number; pageInfo: { hasNextPage: boolean; endCursor: string }; edges: Array<{ node: Entry }> }
      | undefined
  }

  it('shows each kind of fact with its source and subject, oldest first', async () => {
    // The outbox tells the derived task events: each delivery attempted until it is a dead letter. A delivery's
    // entry stays where it was put in line; only its summary says what became of it.
    await expect
      .poll(
        async () => {
          const webhooks = (await line({ first: 100, kinds: ['WEBHOOK'] }))?.edges ?? []
          return webhooks.length >= 4 && webhooks.every((edge) => /dead letter/.test(edge.node.summary))
        },
        { timeout: 60_000 },
      )
      .toBe(true)
    const timeline = await line({ first: 100 })
    const entries = timeline?.edges.map((edge) => edge.node) ?? []
    const times = entries.map((entry) => Date.parse(entry.at))
    expect(times).toEqual([...times].sort((a, b) => a - b))
    const pairs = new Set(entries.map((entry) => `${entry.kind}/${entry.source}/${entry.subject?.__typename ?? '-'}`))
    for (const pair of [
      'CALLBACK/PUSHED/LiveStartNotification',
      'CALLBACK/PUSHED/LiveEndNotification',
      'RECONNECT/PUSHED/LiveResumeNotification',
      'RECORDING/PUSHED/Recording',
      'RECORDING/POLLED/Recording',
      'STATUS/PUSHED/-',
      'LISTED/POLLED/-',
      'AUDIENCE/POLLED/-',
      'HEALTH/INFERRED/-',
      'CALLBACK_MISSING/INFERRED/-',
      'INCIDENT/INFERRED/Incident',
      'INCIDENT/DONE/Incident',
      'ACTION/DONE/Action',
      'WEBHOOK/DONE/-',
    ])
      expect(pairs, pair).toContain(pair)
    expect(timeline?.totalCount).toBe(entries.length)
  })

  it('folds the answers that said nothing new, and tells the drop between them', async () => {
    const polled = (await line({ kinds: ['LISTED', 'AUDIENCE'] }))?.edges.map((edge) => edge.node.summary)
    expect(polled).toEqual([
      expect.stringMatching(/^first listed, 5 answers, .*, 5–7 viewers/),
      'audience peak: 7 viewers',
      'audience dropped from 7 to 2 viewers',
      expect.stringMatching(/^listed, 3 answers, .*, 2–3 viewers/),
    ])
  })

  it('tells a callback the cloud never sent as INFERRED', async () => {
    const missing = (await line({ kinds: ['CALLBACK_MISSING'] }))?.edges.map((edge) => edge.node)
    expect(missing).toEqual([
      expect.objectContaining({ source: 'INFERRED', summary: expect.stringMatching(/LIVE_START/) }),
    ])
  })

  it('pages on with after, to the same line', async () => {
    const whole = (await line({ first: 100 }))?.edges.map((edge) => edge.node) ?? []
    const paged: Entry[] = []
    let after: string | undefined
    for (let page = 0; page < 50; page++) {
      const part = await line({ first: 3, after })
      paged.push(...(part?.edges.map((edge) => edge.node) ?? []))
      if (!part?.pageInfo.hasNextPage) break
      after = part.pageInfo.endCursor
    }
    expect(paged).toEqual(whole)
    const bad = await graphql(gateway, LINE, { id: ID, after: 'nope' }, { headers: bearer(KEYS.a) })
    expect(bad.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT')
  })

  it("keeps a tenant's line to its own keys", async () => {
    expect(await line({}, KEYS.b)).toBeUndefined()
    const answer = await graphql(gateway, LINE, { id: ID }, { headers: bearer(KEYS.b) })
    expect(answer.data).toEqual({ task: null })
  })
})
