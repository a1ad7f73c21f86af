import { writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { emptyTaskState } from '../../src/fold/task.fold.js'
import { actions } from '../../src/storage/tables/action.table.js'
import { writeChanges } from '../../src/storage/graph/graph.statements.js'
import type { ReceivedAction } from '../../src/simulator/cloud.answers.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { freePort } from '../support/free.port.js'
import { startTestGateway, type TestGateway } from '../support/gateway.mode.js'
import { graphql } from '../support/graphql.client.js'
import { metricValue, scrapeMetrics } from '../support/metrics.scrape.js'
import { LIVEGATE_COMMAND, type ServeProcess, startListeningProcess } from '../support/livegate.process.js'
import { scratchDirs } from '../support/scratch.dir.js'
import { subscribe } from '../support/subscription.client.js'
import { type Receiver, startReceiver, WEBHOOK_SECRET } from '../support/receiver.process.js'

// The simulator plays TESTING and OTHER (two tenants) as its own process; HANGING's cloud takes
// requests and never answers; DOWN's cannot be reached at all.
const SECRET = 'abc'
const KEYS = { operator: 'op-key-1', reader: 'read-key-1', other: 'other-op-key-1' }
const POLL_MS = 400
const scratch = scratchDirs('livegate-actions-')

const STOP = `mutation Stop($id: ID!, $reason: String, $key: String) {
  stopTask(id: $id, reason: $reason, idempotencyKey: $key) {
    action { id kind serviceCode taskId requestedBy reason state ret message requestedAt finishedAt refusal }
    task { id status endReason stopRequest { id state } }
  }
}`
const MESSAGE = `mutation Message($code: String!, $user: String!, $text: String!, $key: String) {
  sendMessage(serviceCode: $code, userName: $user, text: $text, from: "ops desk", idempotencyKey: $key) {
    action { id kind serviceCode userName requestedBy state ret message }
  }
}`
const LIVE_TASKS =
  `query Live($code: String!) { tasks(filter: { serviceCode: $code, status: [LIVE] }) { edges { node { id taskId ` +
  `listed userName } } } }`
const TASK = `query Task($id: ID!) { task(id: $id) { id status endReason stopRequest { id state requestedBy } } }`
const AUDIT =
  `query Audit($filter: ActionFilter) { actions(filter: $filter, first: 50) { totalCount edges { node { id kind ` +
  `serviceCode taskId requestedBy state refusal message } } } }`

const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

describe(`actions through the cloud, with the simulator as a process, on ${driverName}`, { timeout: 120_000 }, () => {
  let db: TestDatabase
  let gateway: TestGateway
  let simulator: ServeProcess
  let simulatorUrl: string
  let hanging: Server
  let receiver: Receiver
  const held: Array<{ path: string; release: () => void }> = []

  beforeAll(async () => {
    const dir = scratch()
    const simulatorPort = await freePort()
    const downPort = await freePort()
    hanging = createServer((request, response) =>
      held.push({ path: request.url ?? '', release: () => response.destroy() }),
    )
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve))
    const hangingUrl = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`
    simulatorUrl = `http://127.0.0.1:${simulatorPort}`
    db = await openTestDatabase()
    // Actions are webhook events too: TESTING's go to a receiver that verifies every signature.
    receiver = await startReceiver()
    gateway = await startTestGateway(
      {
        port: 0,
        log: { level: 'silent' },
        services: [
          { serviceCode: 'TESTING', secrets: [SECRET], baseUrl: simulatorUrl },
          { serviceCode: 'OTHER', secrets: [SECRET], baseUrl: simulatorUrl },
          { serviceCode: 'HANGING', secrets: [SECRET], baseUrl: hangingUrl },
          { serviceCode: 'DOWN', secrets: [SECRET], baseUrl: `http://127.0.0.1:${downPort}` },
        ],
        apiKeys: [
          { name: 'operator', key: KEYS.operator, serviceCodes: ['TESTING', 'HANGING', 'DOWN'], can: ['operate'] },
          { name: 'reader', key: KEYS.reader, serviceCodes: ['*'] },
          { name: 'other', key: KEYS.other, serviceCodes: ['OTHER'], can: ['operate'] },
        ],
        upstream: { pollIntervalMs: POLL_MS, timeoutMs: 2000, retries: 0, actionTimeoutMs: 3000 },
        limits: { actionsPerMinute: 1000 },
        webhooks: {
          endpoints: [
            {
              name: 'ops',
              url: `${receiver.url}/hooks/ops`,
              secret: WEBHOOK_SECRET,
              serviceCodes: ['TESTING'],
              events: ['action.*'],
            },
          ],
        },
      },
      db,
    )
    // The simulator's own configuration: the codes it plays and their secrets.
    const file = join(dir, 'simulator.json')
    writeFileSync(
      file,
      JSON.stringify({
        log: { level: 'silent' },
        services: [
          { serviceCode: 'TESTING', secrets: [SECRET] },
          { serviceCode: 'OTHER', secrets: [SECRET] },
        ],
      }),
    )
    simulator = await startListeningProcess(
      [
        ...LIVEGATE_COMMAND,
        'simulate',
        '--config',
        file,
        '--port',
        String(simulatorPort),
        '--gateway',
        gateway.url,
        '--seed',
        '3',
        '--sessions',
        '4',
        '--rate',
        '0.3',
        '--loop',
      ],
      { ...process.env, NODE_ENV: 'test' },
      /task_list at (http:\/\/[^\s]+)\/api\/20140928\/task_list/,
    )
  })

  afterAll(async () => {
    simulator?.process.kill('SIGTERM')
    for (const request of held) request.release()
    hanging?.closeAllConnections()
    await new Promise((resolve) => hanging?.close(resolve))
    await gateway?.close()
    await receiver?.stop()
    await db?.drop()
  })

  const simulated = async () =>
    (await (await fetch(`${simulatorUrl}/simulator/actions`)).json()) as {
      actions: ReceivedAction[]
      taskListAnswers: Record<string, number>
    }
  const received = async (): Promise<ReceivedAction[]> => (await simulated()).actions

  async function liveTask(code: string, key: string): Promise<{ id: string; taskId: string; userName: string }> {
    let found: { id: string; taskId: string; userName: string } | undefined
    await expect
      .poll(
        async () => {
          const answer = await graphql(gateway, LIVE_TASKS, { code }, { headers: bearer(key) })
          found = answer.data?.tasks.edges
            .map((edge: { node: { id: string; taskId: string; listed: boolean } }) => edge.node)
            .find((node: { listed: boolean; userName: string | null }) => node.listed && node.userName)
          return found !== undefined
        },
        { timeout: 60_000, interval: 200 },
      )
      .toBe(true)
    return found as { id: string; taskId: string; userName: string }
  }

  it(
    'a stop reaches the simulator as a signed cancel_task, the task ends STOPPED within two polls, and taskChanged ' +
      'pushes it',
    async () => {
      const task = await liveTask('TESTING', KEYS.operator)
      const changes = subscribe(
        gateway.url,
        `subscription($ids: [ID!]) { taskChanged(filter: { ids: $ids }) { id status endReason } }`,
        { ids: [task.id] },
        bearer(KEYS.operator),
      )
      const actions = subscribe(
        gateway.url,
        `subscription { actionChanged(filter: { kind: STOP_TASK }) { id state taskId } }`,
        {},
        bearer(KEYS.operator),
      )
      // Both subscriptions in place (a busy machine takes its time) before the stop they must see.
      // Counted on /metrics, which answers for every worker of `serve --workers 2` too.
      const open = async (field: string) =>
        metricValue(await scrapeMetrics(gateway.url), 'livegate_subscriptions', { field })
      await expect
        .poll(async () => [await open('taskChanged'), await open('actionChanged')], { timeout: 30_000 })
        .toEqual([1, 1])
      const answer = await graphql(
        gateway,
        STOP,
        { id: task.id, reason: 'breaks the rules' },
        { headers: bearer(KEYS.operator) },
      )
      const pollsBefore = (await simulated()).taskListAnswers.TESTING ?? 0
      expect(answer.errors).toBeUndefined()
      const { action } = answer.data.stopTask
      expect(action).toMatchObject({
        kind: 'STOP_TASK',
        serviceCode: 'TESTING',
        taskId: task.taskId,
        requestedBy: 'operator',
        reason: 'breaks the rules',
        state: 'SUCCEEDED',
        ret: 0,
        refusal: null,
      })
      expect(action.finishedAt).not.toBeNull()
      // Until a callback or the list says it ended, it runs, and shows the request.
      expect(answer.data.stopTask.task.stopRequest).toEqual({ id: action.id, state: 'SUCCEEDED' })

      // The simulator verified the signature (a bad one answers ret ≠ 0) and kept the query as sent.
      const [cancel] = (await received()).filter((entry) => entry.operation === 'cancel_task')
      expect(cancel).toMatchObject({
        path: '/api/20140928/cancel_task',
        query: `service_code=TESTING&task_id=${task.taskId}`,
        params: { service_code: 'TESTING', task_id: task.taskId },
        ret: 0,
      })

      // Ended within two polls of TESTING's task_list after the stop was answered (counted as the
      // simulator answered them), whatever the machine's speed.
      await expect
        .poll(
          async () =>
            (await graphql(gateway, TASK, { id: task.id }, { headers: bearer(KEYS.reader) })).data?.task.endReason,
          { timeout: 30_000, interval: 50 },
        )
        .toBe('STOPPED')
      expect(((await simulated()).taskListAnswers.TESTING ?? 0) - pollsBefore).toBeLessThanOrEqual(2)
      await expect
        .poll(() => changes.events.some((event) => event.taskChanged.endReason === 'STOPPED'), { timeout: 30_000 })
        .toBe(true)
      await expect
        .poll(
          () =>
            actions.events.some(
              (event) => event.actionChanged.id === action.id && event.actionChanged.state === 'SUCCEEDED',
            ),
          { timeout: 30_000 },
        )
        .toBe(true)
      await changes.dispose()
      await actions.dispose()

      // A second stop of the ended task: the cloud has no such task (ret ≠ 0), as data.
      const again = await graphql(gateway, STOP, { id: task.id }, { headers: bearer(KEYS.operator) })
      expect(again.errors).toBeUndefined()
      expect(again.data.stopTask.action).toMatchObject({ state: 'FAILED', ret: 40401, message: 'no such task running' })
      expect(again.data.stopTask.task).toMatchObject({ status: 'ENDED', endReason: 'STOPPED' })

      const metrics = await (await fetch(`${gateway.url}/metrics`)).text()
      expect(metrics).toMatch(/livegate_actions_total\{kind="STOP_TASK",state="SUCCEEDED"\} 1/)
      expect(metrics).toMatch(/livegate_actions_total\{kind="STOP_TASK",state="FAILED"\} 1/)
    },
  )

  it('a read-only key is refused FORBIDDEN, and the refusal is in the audit', async () => {
    const task = await liveTask('TESTING', KEYS.reader)
    const before = (await received()).length
    const answer = await graphql(gateway, STOP, { id: task.id, reason: 'try' }, { headers: bearer(KEYS.reader) })
    expect(answer.status).toBe(403)
    expect(answer.errors?.[0]?.extensions?.code).toBe('FORBIDDEN')
    expect(answer.errors?.[0]?.message).toContain('"can": ["operate"]')
    const message = await graphql(
      gateway,
      MESSAGE,
      { code: 'TESTING', user: 'bob', text: 'hello' },
      { headers: bearer(KEYS.reader) },
    )
    expect(message.errors?.[0]?.extensions?.code).toBe('FORBIDDEN')
    expect((await received()).length).toBe(before)

    const audit = await graphql(gateway, AUDIT, { filter: { state: 'FAILED' } }, { headers: bearer(KEYS.reader) })
    const refusals = audit.data.actions.edges
      .map((edge: { node: unknown }) => edge.node)
      .filter((node: { refusal: string | null }) => node.refusal === 'FORBIDDEN')
    expect(refusals).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'STOP_TASK', taskId: task.taskId, requestedBy: 'reader', state: 'FAILED' }),
        expect.objectContaining({ kind: 'SEND_MESSAGE', requestedBy: 'reader', state: 'FAILED' }),
      ]),
    )
    const viewer = await graphql(gateway, '{ viewer { keyName canOperate } }', {}, { headers: bearer(KEYS.reader) })
    expect(viewer.data.viewer).toEqual({ keyName: 'reader', canOperate: false })
  })

  it("another tenant's task answers exactly as an unknown one", async () => {
    const task = await liveTask('TESTING', KEYS.operator)
    const foreign = await graphql(gateway, STOP, { id: task.id }, { headers: bearer(KEYS.other) })
    const unknownId = Buffer.from(`Task:${JSON.stringify(['OTHER', 'no-such-task'])}`).toString('base64url')
    const unknown = await graphql(gateway, STOP, { id: unknownId }, { headers: bearer(KEYS.other) })
    expect(foreign.status).toBe(unknown.status)
    expect(foreign.errors?.map((e) => ({ message: e.message, code: e.extensions?.code }))).toEqual(
      unknown.errors?.map((e) => ({ message: e.message, code: e.extensions?.code })),
    )
    expect(foreign.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT')
    const message = await graphql(
      gateway,
      MESSAGE,
      { code: 'TESTING', user: 'bob', text: 'hi' },
      { headers: bearer(KEYS.other) },
    )
    const nowhere = await graphql(
      gateway,
      MESSAGE,
      { code: 'NOWHERE', user: 'bob', text: 'hi' },
      { headers: bearer(KEYS.other) },
    )
    expect(message.errors?.[0]?.message).toBe(nowhere.errors?.[0]?.message)
    // And the other tenant's audit holds nothing of TESTING.
    const audit = await graphql(gateway, AUDIT, {}, { headers: bearer(KEYS.other) })
    expect(
      audit.data.actions.edges.every((edge: { node: { serviceCode: string } }) => edge.node.serviceCode === 'OTHER'),
    ).toBe(true)
  })

  it('the same idempotency key calls the cloud once; with other arguments it is BAD_USER_INPUT', async () => {
    const count = async () => (await received()).filter((entry) => entry.operation === 'send_txt_msg').length
    const { userName: bob } = await liveTask('TESTING', KEYS.operator)
    const before = await count()
    const first = await graphql(
      gateway,
      MESSAGE,
      { code: 'TESTING', user: bob, text: 'your input is starving', key: 'msg-1' },
      { headers: bearer(KEYS.operator) },
    )
    expect(first.errors).toBeUndefined()
    expect(first.data.sendMessage.action).toMatchObject({
      kind: 'SEND_MESSAGE',
      userName: bob,
      state: 'SUCCEEDED',
      ret: 0,
    })
    const second = await graphql(
      gateway,
      MESSAGE,
      { code: 'TESTING', user: bob, text: 'your input is starving', key: 'msg-1' },
      { headers: bearer(KEYS.operator) },
    )
    expect(second.data.sendMessage.action).toEqual(first.data.sendMessage.action)
    expect(await count()).toBe(before + 1)
    const kept = (await received()).filter((entry) => entry.operation === 'send_txt_msg').at(-1)
    expect(kept?.params).toEqual({
      service_code: 'TESTING',
      dst_username: bob,
      message: 'your input is starving',
      from_username: 'ops desk',
    })

    const other = await graphql(
      gateway,
      MESSAGE,
      { code: 'TESTING', user: bob, text: 'something else', key: 'msg-1' },
      { headers: bearer(KEYS.operator) },
    )
    expect(other.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', argumentName: 'idempotencyKey' })
    expect(await count()).toBe(before + 1)
  })

  it('ret ≠ 0 is a FAILED action with ret and message, as data', async () => {
    const answer = await graphql(
      gateway,
      MESSAGE,
      { code: 'TESTING', user: 'nobody-here', text: 'hello' },
      { headers: bearer(KEYS.operator) },
    )
    expect(answer.errors).toBeUndefined()
    expect(answer.data.sendMessage.action).toMatchObject({ state: 'FAILED', ret: 40402, message: 'no such user' })
  })

  it('a line break in a message is BAD_USER_INPUT naming the argument, and nothing is sent', async () => {
    const before = (await received()).length
    for (const [variables, name] of [
      [{ code: 'TESTING', user: 'bob', text: 'two\nlines' }, 'text'],
      [{ code: 'TESTING', user: 'bob', text: '' }, 'text'],
      [{ code: 'TESTING', user: 'bob', text: 'x'.repeat(1001) }, 'text'],
      [{ code: 'TESTING', user: 'b\tob', text: 'hi' }, 'userName'],
    ] as const) {
      const answer = await graphql(gateway, MESSAGE, variables, { headers: bearer(KEYS.operator) })
      expect(answer.errors?.[0]?.extensions, JSON.stringify(variables)).toMatchObject({
        code: 'BAD_USER_INPUT',
        argumentName: name,
      })
    }
    expect((await received()).length).toBe(before)
  })

  it(
    'a cloud that hangs: FAILED after upstream.actionTimeoutMs, answered by then; one that cannot be reached: ' +
      'retried, then FAILED',
    async () => {
      // A task of HANGING's and of DOWN's that livegate knows, so the stop is sent.
      await writeChanges(
        gateway.database.db,
        { tasks: [emptyTaskState('HANGING', 'task-1'), emptyTaskState('DOWN', 'task-1')], users: [] },
        new Date(),
      )
      const id = (code: string) => Buffer.from(`Task:${JSON.stringify([code, 'task-1'])}`).toString('base64url')
      const hung = await graphql(gateway, STOP, { id: id('HANGING') }, { headers: bearer(KEYS.operator) })
      expect(hung.errors).toBeUndefined()
      expect(hung.data.stopTask.action).toMatchObject({ state: 'FAILED', ret: null })
      expect(hung.data.stopTask.action.message).toMatch(/no answer within 3000 ms/)
      expect(held.filter((request) => request.path.startsWith('/api/20140928/cancel_task?')).length).toBe(1)

      const down = await graphql(gateway, STOP, { id: id('DOWN') }, { headers: bearer(KEYS.operator) })
      expect(down.data.stopTask.action).toMatchObject({ state: 'FAILED', ret: null })
      expect(down.data.stopTask.action.message).toMatch(/could not be reached \(ECONNREFUSED\)/)
      const [row] = await gateway.database.db
        .select({ attempts: actions.attempts })
        .from(actions)
        .where(eq(actions.serviceCode, 'DOWN'))
      expect(row?.attempts).toBeGreaterThan(1)
    },
  )

  it('the same over graphql-ws: a read-only key is refused, an operator sends', async () => {
    const run = async (key: string, query: string, variables: Record<string, unknown>) => {
      const sub = subscribe(gateway.url, query, variables, bearer(key))
      await expect.poll(() => sub.events.length + sub.errors.length, { timeout: 30_000 }).toBeGreaterThan(0)
      await sub.dispose()
      return sub
    }
    const task = await liveTask('TESTING', KEYS.operator)
    const refused = await run(KEYS.reader, MESSAGE, { code: 'TESTING', user: task.userName, text: 'over ws' })
    expect(JSON.stringify(refused.errors)).toContain('FORBIDDEN')
    const sent = await run(KEYS.operator, MESSAGE, { code: 'TESTING', user: task.userName, text: 'over ws' })
    expect(sent.events[0].sendMessage.action).toMatchObject({ state: 'SUCCEEDED', requestedBy: 'operator' })
    const stopped = await run(KEYS.operator, STOP, { id: task.id, reason: 'over ws' })
    expect(stopped.events[0].stopTask.action).toMatchObject({ state: 'SUCCEEDED', taskId: task.taskId })
    await expect
      .poll(
        async () =>
          (await graphql(gateway, TASK, { id: task.id }, { headers: bearer(KEYS.operator) })).data?.task.endReason,
        { timeout: 30_000, interval: 100 },
      )
      .toBe('STOPPED')
  })

  it(
    'tells the webhooks: action.succeeded and action.failed, signed, with the action as Action shapes it and never ' +
      'the message text',
    async () => {
      const types = async () => (await receiver.received('/hooks/ops')).map((receipt) => receipt.body.type)
      await expect
        .poll(types, { timeout: 30_000 })
        .toEqual(expect.arrayContaining(['action.succeeded', 'action.failed']))
      const receipts = await receiver.received('/hooks/ops')
      expect(receipts.every((receipt) => receipt.verified)).toBe(true)
      // Only TESTING's endpoint: HANGING's and DOWN's failures are not its business.
      expect(receipts.every((receipt) => receipt.body.data.serviceCode === 'TESTING')).toBe(true)
      const stop = receipts.find(
        (receipt) =>
          receipt.body.type === 'action.succeeded' &&
          (receipt.body.data.action as { kind: string }).kind === 'STOP_TASK',
      )
      expect(stop?.body.data).toMatchObject({
        taskId: expect.any(String),
        action: { id: expect.any(String), kind: 'STOP_TASK', state: 'SUCCEEDED', requestedBy: 'operator' },
      })
      const failed = receipts.find(
        (receipt) =>
          receipt.body.type === 'action.failed' &&
          (receipt.body.data.action as { kind: string }).kind === 'SEND_MESSAGE',
      )
      expect(failed?.body.data).toMatchObject({
        action: { kind: 'SEND_MESSAGE', state: 'FAILED', ret: 40402, message: 'no such user' },
      })
      // The failed message's text was "hello": no body carries a message's text.
      const bodies = JSON.stringify(receipts.map((receipt) => receipt.body))
      expect(bodies).not.toContain('hello')
      expect(bodies).not.toContain('"text"')
    },
  )
})
