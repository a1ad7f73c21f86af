import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { emptyTaskState } from '../../src/fold/task.fold.js'
import { startTaskListServer, type TaskListServer } from '../../src/simulator/task-list.server.js'
import { EMPTY_TASK_LIST } from '../../src/simulator/task-list.snapshot.js'
import { recordAction } from '../../src/storage/outbound/action.statements.js'
import { writeChanges } from '../../src/storage/graph/graph.statements.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { startTestGateway, type TestGateway } from '../support/gateway.mode.js'
import { graphql } from '../support/graphql.client.js'
import { scratchDirs } from '../support/scratch.dir.js'

// The rate of actions per key, and a trusted-only key, against a simulated cloud that accepts
// every correctly signed action.
const SECRET = 'abc'
const KEYS = { operator: 'limits-op-1', trusted: 'limits-trusted-1', burst: 'limits-burst-1' }
const VIEWER = 'query Who { viewer { keyName canOperate } }'
const STOP =
  `mutation Stop($id: ID!, $key: String) { stopTask(id: $id, idempotencyKey: $key) { action { id state refusal } } ` +
  `}`
const AUDIT = `query Audit { actions(first: 50) { edges { node { requestedBy state refusal message } } } }`
const scratch = scratchDirs('livegate-action-limits-')
const bearer = (key: string) => ({ authorization: `Bearer ${key}` })
const taskId = (id: string) => Buffer.from(`Task:${JSON.stringify(['TESTING', id])}`).toString('base64url')

describe(`the limits on actions on ${driverName}`, { timeout: 120_000 }, () => {
  let db: TestDatabase
  let gateway: TestGateway
  let cloud: TaskListServer
  let config: Record<string, unknown>

  beforeAll(async () => {
    cloud = await startTaskListServer({
      services: [{ serviceCode: 'TESTING', secret: SECRET }],
      source: () => EMPTY_TASK_LIST,
    })
    const manifest = join(scratch(), 'manifest.json')
    writeFileSync(manifest, JSON.stringify({ [`sha256:${createHash('sha256').update(VIEWER).digest('hex')}`]: VIEWER }))
    db = await openTestDatabase()
    config = {
      port: 0,
      log: { level: 'silent' },
      services: [{ serviceCode: 'TESTING', secrets: [SECRET], baseUrl: cloud.url }],
      apiKeys: [
        { name: 'operator', key: KEYS.operator, serviceCodes: ['TESTING'], can: ['operate'] },
        { name: 'burst', key: KEYS.burst, serviceCodes: ['TESTING'], can: ['operate'] },
        { name: 'frontend', key: KEYS.trusted, serviceCodes: ['TESTING'], can: ['operate'], operations: 'trusted' },
      ],
      graphql: { trustedDocuments: manifest },
      upstream: { pollIntervalMs: 0 },
      limits: { actionsPerMinute: 2 },
    }
    gateway = await startTestGateway(config, db)
    await writeChanges(
      gateway.database.db,
      {
        tasks: ['t-1', 't-2', 't-3', 't-4', 'b-1', 'b-2', 'b-3', 'b-4', 'b-5', 'b-6'].map((id) =>
          emptyTaskState('TESTING', id),
        ),
        users: [],
      },
      new Date(),
    )
  })

  afterAll(async () => {
    await gateway?.close()
    await cloud?.close()
    await db?.drop()
  })

  it(
    'refuses more than limits.actionsPerMinute with RATE_LIMITED (429), records the first refusal, and still ' +
      'answers a repeated idempotency key',
    async () => {
      const stop = (id: string, key?: string) =>
        graphql(gateway, STOP, { id: taskId(id), key }, { headers: bearer(KEYS.operator) })
      const first = await stop('t-1', 'once')
      expect(first.data.stopTask.action).toMatchObject({ state: 'SUCCEEDED', refusal: null })
      expect((await stop('t-2')).data.stopTask.action.state).toBe('SUCCEEDED')
      const over = await stop('t-3')
      expect(over.status).toBe(429)
      expect(over.errors?.[0]?.extensions?.code).toBe('RATE_LIMITED')
      expect((await stop('t-4')).errors?.[0]?.extensions?.code).toBe('RATE_LIMITED')
      // A press repeated under its key is the same action, not a new one: the rate does not apply.
      const again = await stop('t-1', 'once')
      expect(again.data.stopTask.action).toEqual(first.data.stopTask.action)
      expect(cloud.actions.filter((action) => action.operation === 'cancel_task')).toHaveLength(2)

      const audit = await graphql(gateway, AUDIT, {}, { headers: bearer(KEYS.operator) })
      const refused = audit.data.actions.edges
        .map((edge: { node: { refusal: string | null } }) => edge.node)
        .filter((node: { refusal: string | null }) => node.refusal === 'RATE_LIMITED')
      expect(refused).toEqual([
        {
          requestedBy: 'operator',
          state: 'FAILED',
          refusal: 'RATE_LIMITED',
          message: 'RATE_LIMITED: More than 2 actions a minute.',
        },
      ])
      const metrics = await (await fetch(`${gateway.url}/metrics`)).text()
      expect(metrics).toMatch(/livegate_actions_total\{kind="STOP_TASK",state="REFUSED"\} 2/)
    },
  )

  it('holds the rate per key across every process: concurrent stops on several connections admit the limit', async () => {
    // Six at once open several connections, which `serve --workers 2` spreads over its workers:
    // a rate counted per process would let each worker admit the limit.
    const ids = ['b-1', 'b-2', 'b-3', 'b-4', 'b-5', 'b-6']
    const answers = await Promise.all(
      ids.map((id) => graphql(gateway, STOP, { id: taskId(id) }, { headers: bearer(KEYS.burst) })),
    )
    const admitted = answers.filter((answer) => answer.data?.stopTask?.action?.state === 'SUCCEEDED')
    const refused = answers.filter((answer) => answer.errors?.[0]?.extensions?.code === 'RATE_LIMITED')
    expect([admitted.length, refused.length]).toEqual([2, 4])
    expect(refused.every((answer) => answer.status === 429)).toBe(true)
    const stopped = cloud.actions.filter((action) => ids.includes(String(action.params.task_id)))
    expect(stopped).toHaveLength(2)
  })

  it('an action a stopped process left PENDING is FAILED at the next start; any action is a node', async () => {
    const { row } = await recordAction(
      gateway.database.db,
      {
        kind: 'STOP_TASK',
        serviceCode: 'TESTING',
        taskId: 't-9',
        argsHash: 'x',
        keyScope: 'operator',
        requestedBy: 'operator',
        state: 'PENDING',
        requestedAt: new Date(Date.now() - 3_600_000),
      },
      new Date(),
    )
    // The next start: the gateway stopped and started again, as an operator restarts it.
    await gateway.close()
    gateway = await startTestGateway(config, db)
    const id = Buffer.from(`Action:${JSON.stringify([String(row.id)])}`).toString('base64url')
    const node = await graphql(
      gateway,
      'query N($id: ID!) { node(id: $id) { id ... on Action { state taskId message finishedAt } } }',
      { id },
      { headers: bearer(KEYS.operator) },
    )
    expect(node.data.node).toMatchObject({ id, state: 'FAILED', taskId: 't-9' })
    expect(node.data.node.message).toMatch(/stopped before the cloud's answer was recorded/)
  })

  it('a trusted-only key acts only through documents of its manifest', async () => {
    const sent = await graphql(gateway, STOP, { id: taskId('t-4') }, { headers: bearer(KEYS.trusted) })
    expect(sent.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_ID_REQUIRED')
    expect(cloud.actions.filter((action) => action.params.task_id === 't-4')).toEqual([])
  })
})
