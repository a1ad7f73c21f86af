import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { deliverTo, SECRET } from '../support/gateway.fixture.js'
import { describeInProcess } from '../support/gateway.mode.js'
import { graphql } from '../support/graphql.client.js'
import { type Receiver, startReceiver, WEBHOOK_SECRET } from '../support/receiver.process.js'

// A forgetful cloud's incident over its whole life: five tasks listed, the start of one only
// sent, so four are found missing their start; the rule counts the last hour, so the incident
// resolves once those findings are more than an hour old. The gateway's clock is moved on an
// hour for that (the poller, the samples and the rules all read it), as no test waits an hour.

const KEY = 'key-operator'
const HOUR = 3_600_000
const FIELDS = 'id rule state serviceCode summary value threshold openedAt resolvedAt task { taskId }'

describeInProcess(
  `service.callbacksMissing opens and resolves (${driverName})`,
  "the gateway's clock is moved on an hour, and a process has only the machine's",
  () => {
    let db: TestDatabase
    let gateway: Gateway
    let receiver: Receiver
    let cloud: Server
    let offset = 0
    let startKept = false
    const listed = ['f-1', 'f-2', 'f-3', 'f-4', 'f-5']

    const forgetful = async () => {
      const query = `{ incidents(filter: { rule: "forgetful" }) { edges { node { ${FIELDS} } } } }`
      const answer = await graphql(gateway, query, {}, { headers: { authorization: `Bearer ${KEY}` } })
      expect(answer.errors, answer.text).toBeUndefined()
      return (answer.data.incidents.edges as Array<{ node: Record<string, any> }>).map((edge) => edge.node)
    }
    const states = async () => (await forgetful()).map((incident) => incident.state)
    const told = async (type: string) => {
      const receipts = (await receiver.received('/hooks/ops')).filter((receipt) => receipt.body.type === type)
      return receipts.map((receipt) => receipt.body.data.incident as Record<string, unknown>)
    }

    beforeAll(async () => {
      db = await openTestDatabase()
      receiver = await startReceiver()
      // The cloud's task list: the five tasks, their input growing, until the test ends.
      let bytes = 0
      cloud = createServer((_request, response) => {
        bytes += 200_000
        const inputs = [{ user_name: 'carol', device_type: 2, url: '' }]
        // Nothing listed until the one start is kept: a busy machine's late start would be a fifth finding.
        const task_list = startKept
          ? listed.map((id) => ({ id, vs_id: 'xvs-1', input_bytes: bytes, inputs, outputs: [] }))
          : []
        response.setHeader('content-type', 'application/json')
        response.end(JSON.stringify({ ret: 0, task_list, user_list: [] }))
      })
      await new Promise<void>((resolve) => cloud.listen(0, '127.0.0.1', resolve))
      const baseUrl = `http://127.0.0.1:${(cloud.address() as AddressInfo).port}`
      const hooks = { url: `${receiver.url}/hooks/ops`, secret: WEBHOOK_SECRET, serviceCodes: ['FORGETFUL'] }
      const config = loadConfig({
        env: {},
        value: {
          port: 0,
          log: { level: 'silent' },
          services: [{ serviceCode: 'FORGETFUL', secrets: [SECRET], baseUrl }],
          apiKeys: [{ name: 'operator', key: KEY, serviceCodes: ['FORGETFUL'], can: ['operate'] }],
          upstream: { pollIntervalMs: 250, timeoutMs: 1000, retries: 0 },
          reconcile: { graceMs: 500 },
          alerts: { rules: [{ name: 'forgetful', when: 'service.callbacksMissing', above: 3 }] },
          webhooks: {
            retrySchedule: ['200ms', '500ms'],
            endpoints: [{ name: 'ops', ...hooks, events: ['incident.*'] }],
          },
        },
      })
      // The one start the cloud did send, before its task is first listed.
      gateway = await startGateway(config, { database: db.database, now: () => new Date(Date.now() + offset) })
      const start = sampleCallbacks('f-1', 'FORGETFUL').liveStart as Record<string, string>
      expect((await deliverTo(gateway, start)).status).toBe(200)
      startKept = true
    }, 120_000)

    afterAll(async () => {
      await gateway?.close()
      await new Promise((resolve) => cloud?.close(resolve))
      await receiver?.stop()
      await db?.drop()
    })

    it('opens on the tasks found missing a start, with a summary a person reads', async () => {
      await expect.poll(states, { timeout: 20_000 }).toEqual(['OPEN'])
      const [opened] = await forgetful()
      expect(opened).toMatchObject({ serviceCode: 'FORGETFUL', value: 4, threshold: 3, task: null, resolvedAt: null })
      const sentence = '4 tasks in the last hour whose start or end the cloud never sent (above 3)'
      expect(opened?.summary).toBe(`FORGETFUL: ${sentence}`)
      const openedIds = async () => (await told('incident.opened')).map((incident) => incident.id)
      await expect.poll(openedIds, { timeout: 20_000 }).toEqual([opened?.id])
    })

    it('resolves once the findings are more than an hour old, tells it once, and opens nothing again', async () => {
      const [opened] = await forgetful()
      offset = HOUR + 60_000
      await expect.poll(states, { timeout: 20_000 }).toEqual(['RESOLVED'])
      const [resolved] = await forgetful()
      expect(resolved).toMatchObject({ id: opened?.id, summary: opened?.summary, value: 4 })
      expect(Date.parse(resolved?.resolvedAt) - Date.parse(opened?.openedAt)).toBeGreaterThanOrEqual(HOUR)
      const resolution = { id: opened?.id, state: 'RESOLVED', resolution: 'cleared', serviceCode: 'FORGETFUL' }
      const resolutions = () => told('incident.resolved')
      await expect.poll(resolutions, { timeout: 20_000 }).toEqual([expect.objectContaining(resolution)])
      // Still listed, the tasks were each counted once: a pass later, nothing opens again.
      await gateway.parts.incidents.evaluate()
      expect((await forgetful()).map((incident) => incident.id)).toEqual([opened?.id])
      expect(await told('incident.opened')).toHaveLength(1)
    })
  },
)
