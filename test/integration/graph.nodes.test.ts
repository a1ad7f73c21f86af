import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { deliverTo, SECRET, TEST_CONFIG } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'

// What the task list lists: one live task by carol, watched by 7 over its flv output.
const TASK_LIST = {
  ret: 0,
  task_list: [
    {
      id: 'node-live',
      vs_id: 'xvs-9',
      input_bytes: 4096,
      inputs: [{ user_name: 'carol', device_type: 2, url: '' }],
      outputs: [
        {
          tag: 'hd',
          format: 'flv',
          http_connections_num: 7,
          http_output_bytes: 1000,
          live_url: 'http://xvs-9.example/live/node-live.flv',
          streams: [
            { index: 0, codec_type: 0, width: 640, height: 360, bit_rate: 800000 },
            { index: 1, codec_type: 1, width: 0, height: 0, bit_rate: 64000 },
          ],
        },
      ],
    },
  ],
  user_list: [{ user_name: 'carol', vs_id: 'xvs-9', device_type: 'ios', client_version: '5.1' }],
}

// Every node of the graph, with what each must hold the same after a restart. Fields of one name
// and different nullability (Task.taskId and Notification.taskId, User.userName and
// Task.userName) take an alias side by side.
const EVERY_NODE = `{
  tasks { edges { node {
    id taskId status userName
    user { id userName }
    outputs { id tag task { id } }
    notifications { edges { node { id kind } } }
  } } }
  users { edges { node { id userName } } }
}`

const AS_NODE = `query($id: ID!) {
  node(id: $id) {
    __typename id
    ... on Task { taskId status userName }
    ... on User { name: userName deviceType }
    ... on Output { tag playUrl outputTask: task { id } }
    ... on Notification { kind type hashedId: taskId }
  }
}`

describe(`every node is found again by its global id, also after a restart (${driverName})`, () => {
  let db: TestDatabase
  let upstream: Server
  let gateway: Gateway
  let config: ReturnType<typeof loadConfig>

  beforeAll(async () => {
    upstream = createServer((_request, response) => {
      response.setHeader('content-type', 'application/json')
      response.end(JSON.stringify(TASK_LIST))
    })
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
    db = await openTestDatabase()
    config = loadConfig({
      env: {},
      value: {
        ...TEST_CONFIG,
        services: [
          {
            serviceCode: 'TESTING',
            secrets: [SECRET],
            baseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
          },
        ],
        upstream: { pollIntervalMs: 60_000, timeoutMs: 2000, retries: 0 },
      },
    })
    gateway = await startGateway(config, { database: db.database })
    const samples = sampleCallbacks('node-ended') as Record<string, Record<string, string>>
    for (const fields of [
      samples.liveStart,
      samples.liveEnd,
      samples.thumbnail,
      { ...samples.clientDisconnect, hashed_id: 'node-ended' },
      { type: '77', service_code: 'TESTING', hashed_id: 'node-ended' },
    ]) {
      expect((await deliverTo(gateway, fields as Record<string, string>)).status).toBe(200)
    }
  }, 300_000)

  afterAll(async () => {
    await gateway?.close()
    await db?.drop()
    await new Promise((resolve) => upstream?.close(resolve))
  })

  let ids: string[] = []
  let before: unknown[] = []

  it('counts live and ended tasks, viewers and output bytes per service code', async () => {
    const answer = await graphql(
      gateway,
      '{ taskCounts { serviceCode live waitingReconnect ended total viewers outputBytes } }',
    )
    expect(answer.errors, answer.text).toBeUndefined()
    expect(answer.data.taskCounts).toEqual([
      { serviceCode: 'TESTING', live: 1, waitingReconnect: 0, ended: 1, total: 2, viewers: 7, outputBytes: 1000 },
    ])
    const live = await graphql(gateway, '{ taskCounts(filter: { status: [LIVE] }) { live ended viewers } }')
    expect(live.data.taskCounts).toEqual([{ live: 1, ended: 0, viewers: 7 }])
  })

  it('names streams by kind, with no size for audio, and containers by enum and as sent', async () => {
    const answer = await graphql(
      gateway,
      '{ tasks(filter: { vsId: "xvs-9" }) { edges { node { taskId inputs { deviceType sourceUrl } outputs { ' +
        'format { container containerName } streams { kind width height } } } } } }',
    )
    expect(answer.errors, answer.text).toBeUndefined()
    expect(answer.data.tasks.edges).toEqual([
      {
        node: {
          taskId: 'node-live',
          inputs: [{ deviceType: '2', sourceUrl: '' }],
          outputs: [
            {
              format: { container: 'FLV', containerName: 'flv' },
              streams: [
                { kind: 'VIDEO', width: 640, height: 360 },
                { kind: 'AUDIO', width: null, height: null },
              ],
            },
          ],
        },
      },
    ])
  })

  it('node(id) and nodes(ids) round-trip every node type', async () => {
    const answer = await graphql(gateway, EVERY_NODE)
    expect(answer.errors, answer.text).toBeUndefined()
    const tasks = answer.data.tasks.edges.map((edge: any) => edge.node)
    expect(tasks.map((task: { taskId: string }) => task.taskId).sort()).toEqual(['node-ended', 'node-live'])
    ids = [
      ...tasks.map((task: any) => task.id),
      ...answer.data.users.edges.map((edge: any) => edge.node.id),
      ...tasks.flatMap((task: any) => task.outputs.map((output: any) => output.id)),
      ...tasks.flatMap((task: any) => task.notifications.edges.map((edge: any) => edge.node.id)),
    ]
    expect(new Set(ids).size).toBe(ids.length)
    before = []
    for (const id of ids) {
      const found = await graphql(gateway, AS_NODE, { id })
      expect(found.errors, found.text).toBeUndefined()
      expect(found.data.node?.id, id).toBe(id)
      before.push(found.data.node)
    }
    const typenames = new Set(before.map((node: any) => node.__typename))
    for (const type of [
      'Task',
      'User',
      'Output',
      'LiveStartNotification',
      'LiveEndNotification',
      'ThumbnailNotification',
      'ClientDisconnectNotification',
      'UnknownNotification',
    ]) {
      expect(typenames, type).toContain(type)
    }
    // A task's user and its outputs are the same nodes the ids name.
    const live = tasks.find((task: { taskId: string }) => task.taskId === 'node-live')
    expect(before).toContainEqual({ __typename: 'User', id: live.user.id, name: 'carol', deviceType: 'ios' })
    expect(before).toContainEqual(
      expect.objectContaining({ __typename: 'Output', id: live.outputs[0].id, tag: 'hd', outputTask: { id: live.id } }),
    )

    const batch = await graphql(gateway, 'query($ids: [ID!]!) { nodes(ids: $ids) { id } }', { ids: [...ids].reverse() })
    expect(batch.data.nodes.map((node: { id: string }) => node.id)).toEqual([...ids].reverse())
    const unknown = Buffer.from('User:["TESTING","nobody"]').toString('base64url')
    expect((await graphql(gateway, AS_NODE, { id: unknown })).data).toEqual({ node: null })
    const malformed = await graphql(gateway, AS_NODE, { id: 'not-an-id' })
    expect(malformed.errors?.[0]?.extensions).toEqual({ code: 'BAD_USER_INPUT', argumentName: 'id' })
  })

  it('the same ids name the same nodes on a gateway started again on the same database', async () => {
    expect(ids.length).toBeGreaterThan(8)
    await gateway.close()
    gateway = await startGateway(config, { database: db.database })
    for (const [index, id] of ids.entries()) {
      const found = await graphql(gateway, AS_NODE, { id })
      expect(found.errors, found.text).toBeUndefined()
      expect(found.data.node, id).toEqual(before[index])
    }
  })
})
