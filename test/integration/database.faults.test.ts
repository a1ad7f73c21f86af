import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { describeOnServer } from '../support/database.fixture.js'
import { SECRET, send, signFor } from '../support/gateway.fixture.js'
import { graphql } from '../support/graphql.client.js'
import { type PrivateCluster, startPrivateCluster } from '../support/postgres.cluster.js'
import { type Bouncer, portOf, startBouncer, topologyAvailable } from '../support/postgres.topology.js'
import { scratchDirs } from '../support/scratch.dir.js'

// Issue 44's faults as real processes, in its topology: `database.url` is PgBouncer in transaction
// mode, `database.directUrl` the primary. PgBouncer is stopped and started again, then the primary
// is: a callback answered 2xx meanwhile must be in the log once it is back, a query must answer a
// code of the catalogue (never a 500), and the gateway must come back by itself.

const KEY = 'faults-operator'
const auth = { headers: { authorization: `Bearer ${KEY}` } }
const TASK = `query($t: String!) { tasks(filter: { serviceCode: "TESTING", taskIds: [$t] }) {
  totalCount edges { node { taskId } } } }`
const STORED = `query($t: String!) { notifications(filter: { taskIds: [$t] }, first: 100) { edges { node { fields } } } }`

const scratch = scratchDirs('livegate-faults-')
const describeTopology = topologyAvailable() ? describeOnServer : (name: string) => it.skip(name, () => {})

describeTopology('faults of the topology: PgBouncer restarted, the primary restarted', () => {
  let primary: PrivateCluster
  let bouncer: Bouncer
  let gateway: Gateway

  beforeAll(async () => {
    primary = await startPrivateCluster()
    bouncer = await startBouncer(portOf(primary.url))
    const config = loadConfig({
      env: { DATABASE_URL: bouncer.url, DATABASE_DIRECT_URL: primary.url },
      value: {
        port: 0,
        host: '127.0.0.1',
        log: { level: 'silent' },
        spool: { dir: scratch() },
        services: [{ serviceCode: 'TESTING', secrets: [SECRET] }],
        apiKeys: [{ name: 'operator', key: KEY, serviceCodes: ['TESTING'] }],
      },
    })
    gateway = await startGateway(config)
  }, 120_000)

  afterAll(async () => {
    await gateway?.close().catch(() => {})
    await bouncer?.destroy()
    await primary?.destroy()
  })

  /** Posts callbacks `from` to `to` of a task and returns each one's HTTP status. */
  const stream = async (taskId: string, from: number, to: number): Promise<number[]> => {
    const statuses: number[] = []
    for (let seq = from; seq < to; seq += 1) {
      const fields = { ...(sampleCallbacks(taskId).liveResume as Record<string, string>), seq: String(seq) }
      statuses.push((await send(signFor(gateway, fields))).status)
    }
    return statuses
  }

  /** The codes of a query's errors, and its HTTP status: what a client sees while the database is away. */
  const queried = async (taskId: string) => {
    const answer = await graphql(gateway, TASK, { t: taskId }, auth)
    return { status: answer.status, codes: (answer.errors ?? []).map((error) => error.extensions?.code) }
  }

  /** The seqs of a task's callbacks in the log. */
  const storedSeqs = async (taskId: string): Promise<number[]> => {
    const answer = await graphql(gateway, STORED, { t: taskId }, auth)
    const edges = (answer.data?.notifications.edges ?? []) as Array<{ node: { fields: Record<string, string> } }>
    return edges.map((edge) => Number(edge.node.fields.seq)).sort((a, b) => a - b)
  }

  const faultCases: Array<[string, () => Promise<void>, () => Promise<void>]> = [
    ['PgBouncer', () => bouncer.stop(), () => bouncer.start()],
    ['the primary', () => primary.stop(), () => primary.start()],
  ]

  for (const [name, stop, start] of faultCases) {
    it(`${name} stopped and started again: no callback answered 2xx is lost, queries answer a catalogue code, and the ` +
      'gateway recovers by itself', async () => {
      const taskId = `fault-${randomUUID()}`
      const before = await stream(taskId, 0, 10)
      expect(before).toEqual(before.map(() => 200))
      await stop()
      const during = await stream(taskId, 10, 30)
      // Spooled (200) or refused (503), never anything else.
      for (const status of during) expect([200, 503]).toContain(status)
      const refused = await queried(taskId)
      expect(refused.codes.length).toBeGreaterThan(0)
      expect(refused.codes).not.toContain('INTERNAL_SERVER_ERROR')
      expect(refused.status).not.toBe(500)
      await start()
      // Back by itself: queries answer again, with no restart of the gateway.
      await expect.poll(async () => (await queried(taskId)).codes, { timeout: 60_000, interval: 300 }).toEqual([])
      const after = await stream(taskId, 30, 40)
      expect(after).toEqual(after.map(() => 200))
      const statuses = [...before, ...during, ...after]
      const answered = statuses.flatMap((status, seq) => (status === 200 ? [seq] : []))
      expect(answered.length).toBeGreaterThanOrEqual(20)
      // Every one answered 2xx, once; one refused with 503 may or may not be there (its sender retries it).
      await expect
        .poll(async () => (await storedSeqs(taskId)).filter((seq) => statuses[seq] === 200), {
          timeout: 60_000,
          interval: 300,
        })
        .toEqual(answered)
    }, 180_000)
  }
})
