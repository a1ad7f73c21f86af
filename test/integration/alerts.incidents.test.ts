import { execFile } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MEMORY_DATA_DIR } from '../../src/config/index.js'
import { type Database, openDatabase } from '../../src/storage/database.client.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { deliverTo, SECRET } from '../support/gateway.fixture.js'
import { servingWorkers, startTestGateway, type TestGateway } from '../support/gateway.mode.js'
import { graphql } from '../support/graphql.client.js'
import { LIVEGATE_COMMAND, ROOT } from '../support/livegate.process.js'
import { metricValue, scrapeMetrics } from '../support/metrics.scrape.js'
import { scratchDirs } from '../support/scratch.dir.js'
import { type Subscribed, subscribe } from '../support/subscription.client.js'
import { type Receiver, startReceiver, WEBHOOK_SECRET } from '../support/receiver.process.js'

// Each signal against a cloud of the test's own, whose task lists say exactly what the test set
// (the ground truth): an input that stops growing, viewers that fall, a list that fails, a task
// the cloud never sent a start for. Two gateways on one database evaluate the same rules.

const KEYS = { operator: 'key-operator', reader: 'key-reader', other: 'key-other' }
const bearer = (key: string) => ({ authorization: `Bearer ${key}` })
const scratch = scratchDirs('livegate-alerts-')

// Under `serve`, the first worker polls while the others start: until the test's cloud lists its tasks
// (after the gateway is ready, once their starts are delivered) the code truly has 0 viewers, for as long as the
// start takes on a busy machine. Its `for` outlasts that, as an operator's would outlast a deploy; it clears as
// soon as ever.
const AUDIENCE_FOR_S = servingWorkers ? 60 : 3

const RULES = [
  { name: 'starving', when: 'task.health', is: ['STARVING'], for: '1s', clearFor: '1s', severity: 'CRITICAL' },
  { name: 'patient', when: 'task.health', is: ['STARVING'], for: '1h' },
  { name: 'thin', when: 'task.viewers', below: 5, for: '500ms', serviceCodes: ['TESTING'] },
  { name: 'weak-input', when: 'task.inputBitrate', below: 100_000, for: '500ms', serviceCodes: ['TESTING'] },
  {
    name: 'audience-drop',
    when: 'service.viewers',
    below: 3,
    for: `${AUDIENCE_FOR_S}s`,
    clearFor: '3s',
    serviceCodes: ['TESTING'],
    severity: 'INFO',
  },
  { name: 'stale-list', when: 'upstream.stale', for: '2s', severity: 'CRITICAL' },
  { name: 'forgetful', when: 'service.callbacksMissing', above: 0, serviceCodes: ['TESTING'] },
]

/** A task as the test's cloud lists it: its input grows by `step` bytes an answer. */
interface Listed {
  viewers: number
  step: number
  bytes: number
}

/** One service code's cloud: what its task_list lists, or that it fails. */
class Cloud {
  readonly tasks = new Map<string, Listed>()
  failing = false
  private server: Server | undefined

  async start(): Promise<string> {
    this.server = createServer((_request, response) => {
      if (this.failing) {
        response.writeHead(500).end('down')
        return
      }
      const task_list = [...this.tasks].map(([id, task]) => {
        task.bytes += task.step
        return {
          id,
          vs_id: 'xvs-1',
          input_bytes: task.bytes,
          inputs: [{ user_name: 'carol', device_type: 2, url: '' }],
          outputs: [
            {
              tag: 'hd',
              format: 'flv',
              http_connections_num: task.viewers,
              http_output_bytes: 1000,
              live_url: `http://xvs-1/${id}.flv`,
              streams: [],
            },
          ],
        }
      })
      response.setHeader('content-type', 'application/json')
      response.end(JSON.stringify({ ret: 0, task_list, user_list: [] }))
    })
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve))
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }

  list(id: string, more: Partial<Listed> = {}): void {
    this.tasks.set(id, { viewers: 10, step: 200_000, bytes: 1000, ...this.tasks.get(id), ...more })
  }

  async stop(): Promise<void> {
    await new Promise((resolve) => this.server?.close(resolve))
  }
}

const FIELDS =
  'id rule severity state serviceCode summary value threshold startedAt openedAt acknowledgedAt acknowledgedBy ' +
  'note resolvedAt task { taskId }'

describe(`alert rules open, resolve and tell incidents (${driverName})`, () => {
  let db: TestDatabase
  let second: Database | undefined
  let gateways: TestGateway[] = []
  let receiver: Receiver
  const testing = new Cloud()
  const other = new Cloud()
  let config: (rules?: unknown[]) => Record<string, unknown>
  let thinEvents: Subscribed<{ incidentChanged: Record<string, unknown> }>
  let otherEvents: Subscribed<{ incidentChanged: Record<string, unknown> }>
  const gateway = () => gateways[0] as TestGateway
  // The watch evaluates the rules on every sample: once two more are taken, it has looked at the state before them.
  const evaluated = async () => {
    const taken = async () => metricValue(await scrapeMetrics(gateway().url), 'livegate_samples_total')
    const before = await taken()
    await expect.poll(taken, { timeout: 60_000 }).toBeGreaterThanOrEqual(before + 2)
  }
  const incidents = async (filter: Record<string, unknown>, key = KEYS.operator) => {
    const answer = await graphql(
      gateway(),
      `query($filter: IncidentFilter) { incidents(filter: $filter) { edges { node { ${FIELDS} } } } }`,
      { filter },
      { headers: bearer(key) },
    )
    expect(answer.errors, answer.text).toBeUndefined()
    return (answer.data.incidents.edges as Array<{ node: Record<string, any> }>).map((edge) => edge.node)
  }
  const stateOf = async (rule: string, taskId?: string) =>
    (await incidents({ rule }))
      .filter((incident) => taskId === undefined || incident.task?.taskId === taskId)
      .map((incident) => incident.state)

  beforeAll(async () => {
    db = await openTestDatabase()
    receiver = await startReceiver()
    const [testingUrl, otherUrl] = [await testing.start(), await other.start()]
    config = (rules = RULES) => ({
      port: 0,
      log: { level: 'silent' },
      services: [
        { serviceCode: 'TESTING', secrets: [SECRET], baseUrl: testingUrl },
        { serviceCode: 'OTHER', secrets: [SECRET], baseUrl: otherUrl },
      ],
      apiKeys: [
        { name: 'operator', key: KEYS.operator, serviceCodes: ['TESTING'], can: ['operate'] },
        { name: 'reader', key: KEYS.reader, serviceCodes: ['TESTING'] },
        { name: 'other', key: KEYS.other, serviceCodes: ['OTHER'], can: ['operate'] },
      ],
      // A list is stale after 3 polls and the timeout (10.75 s): a busy machine that holds a poller back
      // for seconds is no fault, and `stale-list` opens only where the test's cloud fails.
      upstream: { pollIntervalMs: 250, timeoutMs: 10_000, retries: 0 },
      reconcile: { graceMs: 3000 },
      alerts: { rules },
      webhooks: {
        retrySchedule: ['200ms', '500ms'],
        endpoints: [
          {
            name: 'ops',
            url: `${receiver.url}/hooks/ops`,
            secret: WEBHOOK_SECRET,
            serviceCodes: ['TESTING'],
            events: ['incident.*'],
          },
        ],
      },
    })
    // Both gateways log their lines, kept to read the incidents' own.
    gateways = [await startTestGateway(config(), db, { logs: true })]
    // Started by the cloud's callbacks, then listed at once: no code goes long without its audience.
    const samples = (taskId: string, code: string) =>
      sampleCallbacks(taskId, code) as Record<string, Record<string, string>>
    expect((await deliverTo(gateway(), samples('t-ok', 'TESTING').liveStart as Record<string, string>)).status).toBe(
      200,
    )
    expect((await deliverTo(gateway(), samples('o-1', 'OTHER').liveStart as Record<string, string>)).status).toBe(200)
    testing.list('t-ok')
    other.list('o-1')
    // Two instances on one database: on a server each with its own pool, on PGlite sharing the one.
    // With TEST_POOLER_URL, db.url is PgBouncer: the second opens it as the first does, with the direct URL for sessions.
    second = db.url
      ? await openDatabase({ url: db.url, directUrl: db.directUrl, dataDir: MEMORY_DATA_DIR, maxConnections: 5 })
      : undefined
    gateways.push(await startTestGateway(config(), db, { logs: true, ...(second ? { database: second } : {}) }))
    thinEvents = subscribe(
      gateway().url,
      `subscription { incidentChanged(filter: { rule: "thin" }) { ${FIELDS} } }`,
      {},
      bearer(KEYS.reader),
    )
    otherEvents = subscribe(
      gateways[1]?.url as string,
      `subscription { incidentChanged { ${FIELDS} } }`,
      {},
      bearer(KEYS.other),
    )
    // A limit against a hang, not a measure: two gateways (in serve mode two `serve --workers 2`) on a busy machine.
  }, 600_000)

  afterAll(async () => {
    await thinEvents?.dispose()
    await otherEvents?.dispose()
    for (const running of gateways) await running.close()
    await second?.close()
    await db?.drop()
    await receiver?.stop()
    await testing.stop()
    await other.stop()
  })

  it('opens nothing while every task is healthy', async () => {
    // Both tasks sampled twice, healthy: what every test starts from.
    await expect
      .poll(
        async () =>
          (
            await graphql(
              gateway(),
              '{ tasks { edges { node { taskId health { state } viewers } } } }',
              {},
              { headers: bearer(KEYS.operator) },
            )
          ).data?.tasks.edges[0]?.node,
        {
          timeout: 20_000,
        },
      )
      .toMatchObject({ health: { state: 'HEALTHY' }, viewers: 10 })
    await evaluated()
    expect(await incidents({})).toEqual([])
  })

  it(
    'task.health: a stalled input opens after `for`, a longer ' +
      '`for` opens nothing, and it resolves after `clearFor`',
    async () => {
      testing.list('t-ok', { step: 0 })
      other.list('o-1', { step: 0 })
      await expect.poll(() => stateOf('starving', 't-ok'), { timeout: 20_000 }).toEqual(['OPEN'])
      const [opened] = await incidents({ rule: 'starving' })
      expect(opened).toMatchObject({
        severity: 'CRITICAL',
        serviceCode: 'TESTING',
        value: null,
        threshold: null,
        task: { taskId: 't-ok' },
      })
      expect(opened?.summary).toMatch(/^task TESTING\/t-ok: health STARVING for \d+ s$/)
      expect(Date.parse(opened?.openedAt) - Date.parse(opened?.startedAt)).toBeGreaterThanOrEqual(1000)
      // The stall also makes the input's bitrate 0: weak-input opens with it (before the input is fed
      // again, whatever a busy machine's passes make of the two `for`s).
      await expect.poll(() => stateOf('weak-input', 't-ok'), { timeout: 20_000 }).toEqual(['OPEN'])
      // OTHER's stall is what the tenancy test reads: fed again only once its own poller has seen it.
      await expect
        .poll(
          async () => (await incidents({ rule: 'starving' }, KEYS.other)).map((incident) => incident.task?.taskId),
          {
            timeout: 30_000,
          },
        )
        .toContain('o-1')
      testing.list('t-ok', { step: 200_000 })
      other.list('o-1', { step: 200_000 })
      await expect.poll(() => stateOf('starving', 't-ok'), { timeout: 20_000 }).toEqual(['RESOLVED'])
      expect(await incidents({ rule: 'patient' })).toEqual([])
      // One log line for each change, by whichever instance made it.
      const said = gateways
        .flatMap((running) => running.logLines())
        .filter((line) => line.includes('"incident":'))
        .map((line) => JSON.parse(line) as { msg: string; rule: string; taskId: string | null })
      const starvingLines = said
        .filter((line) => line.rule === 'starving' && line.taskId === 't-ok')
        .map((line) => line.msg.replace(/ for \d+ s$/, ''))
      expect(starvingLines).toEqual([
        'incident opened: task TESTING/t-ok: health STARVING',
        'incident resolved: task TESTING/t-ok: health STARVING',
      ])
      // Fed again, weak-input resolves with it.
      await expect.poll(() => stateOf('weak-input', 't-ok'), { timeout: 20_000 }).toEqual(['RESOLVED'])
    },
  )

  it(
    'task.viewers and service.viewers: viewers that fall open both, with the value and threshold; back up, both ' +
      'resolve',
    async () => {
      testing.list('t-ok', { viewers: 2 })
      await expect.poll(() => stateOf('thin', 't-ok'), { timeout: 20_000 }).toEqual(['OPEN'])
      await expect.poll(() => stateOf('audience-drop'), { timeout: 20_000 + AUDIENCE_FOR_S * 1000 }).toEqual(['OPEN'])
      expect((await incidents({ rule: 'thin' }))[0]).toMatchObject({ value: 2, threshold: 5, severity: 'WARNING' })
      expect((await incidents({ rule: 'audience-drop' }))[0]).toMatchObject({
        value: 2,
        threshold: 3,
        severity: 'INFO',
        task: null,
        serviceCode: 'TESTING',
      })
      testing.list('t-ok', { viewers: 10 })
      await expect.poll(() => stateOf('thin', 't-ok'), { timeout: 20_000 }).toEqual(['RESOLVED'])
      await expect.poll(() => stateOf('audience-drop'), { timeout: 20_000 }).toEqual(['RESOLVED'])
    },
  )

  it('gives the same incident over graphql-ws as over HTTP: opened, then resolved', async () => {
    const events = (await thinEvents.waitFor(2, 20_000)).map((event) => event.incidentChanged)
    expect(events.map((event) => event.state)).toEqual(['OPEN', 'RESOLVED'])
    const [now] = await incidents({ rule: 'thin' }, KEYS.reader)
    expect(events[1]).toEqual(now)
  })

  it('task.inputBitrate: a thin input opens and resolves', async () => {
    testing.list('t-ok', { step: 1000 })
    await expect.poll(() => stateOf('weak-input', 't-ok'), { timeout: 20_000 }).toEqual(['OPEN', 'RESOLVED'])
    expect((await incidents({ rule: 'weak-input', state: 'OPEN' }))[0]?.summary).toMatch(
      /^task TESTING\/t-ok: input bits\/s \d+ below 100000 for/,
    )
    testing.list('t-ok', { step: 200_000 })
    await expect.poll(() => stateOf('weak-input', 't-ok'), { timeout: 20_000 }).toEqual(['RESOLVED', 'RESOLVED'])
  })

  it('service.callbacksMissing: a task the cloud never sent a start for opens it', async () => {
    testing.list('t-forgot')
    await expect.poll(() => stateOf('forgetful'), { timeout: 20_000 }).toEqual(['OPEN'])
    expect((await incidents({ rule: 'forgetful' }))[0]).toMatchObject({ value: 1, threshold: 0, task: null })
  })

  it('upstream.stale: a task list that fails opens it for its code only; answering again resolves it', async () => {
    testing.failing = true
    try {
      // Stale after 10.75 s without a success, then open after its 2 s.
      await expect.poll(() => stateOf('stale-list'), { timeout: 60_000 }).toEqual(['OPEN'])
      expect((await incidents({ rule: 'stale-list' }))[0]).toMatchObject({
        serviceCode: 'TESTING',
        summary: expect.stringMatching(/^TESTING: task list stale for \d+ s$/),
      })
    } finally {
      testing.failing = false
    }
    await expect.poll(() => stateOf('stale-list'), { timeout: 30_000 }).toEqual(['RESOLVED'])
  })

  it('a task that ends resolves its incidents, and the webhook says so', async () => {
    testing.list('t-ok', { step: 0 })
    await expect.poll(() => stateOf('starving', 't-ok'), { timeout: 20_000 }).toEqual(['OPEN', 'RESOLVED'])
    testing.tasks.delete('t-ok')
    expect(
      (await deliverTo(gateway(), sampleCallbacks('t-ok', 'TESTING').liveEnd as Record<string, string>)).status,
    ).toBe(200)
    await expect.poll(() => stateOf('starving', 't-ok'), { timeout: 20_000 }).toEqual(['RESOLVED', 'RESOLVED'])
    const [latest] = await incidents({ rule: 'starving' })
    await expect
      .poll(
        async () =>
          (await receiver.received('/hooks/ops')).find(
            (receipt) =>
              receipt.body.type === 'incident.resolved' && (receipt.body.data.incident as any)?.id === latest?.id,
          )?.body.data,
        {
          timeout: 20_000,
        },
      )
      .toMatchObject({
        serviceCode: 'TESTING',
        taskId: 't-ok',
        incident: {
          id: latest?.id,
          rule: 'starving',
          state: 'RESOLVED',
          resolution: 'task-ended',
          serviceCode: 'TESTING',
          taskId: 't-ok',
        },
      })
  })

  it(
    'acknowledging needs an operate key of the incident’s code; ' +
      'another tenant’s incident answers as an unknown id',
    async () => {
      const [open] = await incidents({ rule: 'forgetful' })
      const ack = (key: string, id: string, note?: string) =>
        graphql(
          gateway(),
          `mutation($id: ID!, $note: String) { acknowledgeIncident(id: $id, note: $note) { ${FIELDS} } }`,
          { id, note },
          { headers: bearer(key) },
        )
      const refused = await ack(KEYS.reader, open?.id)
      expect(refused.errors?.[0]?.extensions?.code).toBe('FORBIDDEN')
      const unknownId = Buffer.from('Incident:["999999"]').toString('base64url')
      const foreign = await ack(KEYS.other, open?.id)
      const unknown = await ack(KEYS.other, unknownId)
      expect(foreign.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT')
      expect({ status: foreign.status, errors: foreign.errors }).toEqual({
        status: unknown.status,
        errors: unknown.errors,
      })
      const done = await ack(KEYS.operator, open?.id, 'on it')
      expect(done.errors, done.text).toBeUndefined()
      expect(done.data.acknowledgeIncident).toMatchObject({
        id: open?.id,
        state: 'ACKNOWLEDGED',
        acknowledgedBy: 'operator',
        note: 'on it',
      })
      // Safe to repeat: answered as it stands, nothing written again.
      const again = await ack(KEYS.operator, open?.id, 'again')
      expect(again.data.acknowledgeIncident).toEqual(done.data.acknowledgeIncident)
      const audit = await graphql(
        gateway(),
        '{ actions(filter: { kind: ACKNOWLEDGE_INCIDENT }) { edges { node { state requestedBy reason refusal } } } }',
        {},
        { headers: bearer(KEYS.operator) },
      )
      expect(audit.data.actions.edges.map((edge: any) => edge.node)).toEqual([
        { state: 'SUCCEEDED', requestedBy: 'operator', reason: 'on it', refusal: null },
        { state: 'FAILED', requestedBy: 'reader', reason: null, refusal: 'FORBIDDEN' },
      ])
      await expect
        .poll(
          async () =>
            (await receiver.received('/hooks/ops')).filter((receipt) => receipt.body.type === 'incident.acknowledged')
              .length,
          { timeout: 20_000 },
        )
        .toBe(1)
    },
  )

  it('keeps each tenant to its own incidents: queries, node, subscriptions and webhooks', async () => {
    expect((await incidents({}, KEYS.reader)).every((incident) => incident.serviceCode === 'TESTING')).toBe(true)
    // A busy machine may keep OTHER's poller from answering long enough for its list to go stale
    // (`stale-list` watches every code): what this test holds is the scope, not OTHER's poller.
    const others = (await incidents({}, KEYS.other)).filter((incident) => incident.rule !== 'stale-list')
    expect(others.map((incident) => [incident.rule, incident.serviceCode, incident.task?.taskId])).toEqual([
      ['starving', 'OTHER', 'o-1'],
    ])
    const node = await graphql(
      gateway(),
      'query($id: ID!) { node(id: $id) { id } }',
      { id: others[0]?.id },
      { headers: bearer(KEYS.reader) },
    )
    expect(node.data.node).toBeNull()
    // OTHER's starving task opens, then resolves once its samples show the input growing: on a busy
    // machine the sampler may not have got there yet when this test starts (two CI runs at once did).
    await expect.poll(() => otherEvents.events.length, { timeout: 30_000 }).toBeGreaterThanOrEqual(2)
    expect(otherEvents.events.every((event) => event.incidentChanged.serviceCode === 'OTHER')).toBe(true)
    const receipts = await receiver.received('/hooks/ops')
    expect(receipts.length).toBeGreaterThan(0)
    expect(receipts.every((receipt) => receipt.verified && receipt.body.data.serviceCode === 'TESTING')).toBe(true)
  })

  it('two instances open each incident once and tell it once', async () => {
    const all = await incidents({})
    const opened = (await receiver.received('/hooks/ops')).filter((receipt) => receipt.body.type === 'incident.opened')
    // Every webhook id once, and one `incident.opened` per incident, whichever gateway decided it.
    expect(new Set(opened.map((receipt) => receipt.id)).size).toBe(opened.length)
    expect(opened.map((receipt) => (receipt.body.data.incident as any).id).sort()).toEqual(
      all.map((incident) => incident.id).sort(),
    )
    const totals = (await scrapeMetrics(gateways[0]?.url as string))
      .concat(await scrapeMetrics(gateways[1]?.url as string))
      .filter((sample) => sample.name === 'livegate_incidents_total')
    // Counted once, by whichever instance opened it: TESTING's and OTHER's together.
    const everyOpened = all.length + (await incidents({}, KEYS.other)).length
    expect(totals.reduce((sum, sample) => sum + sample.value, 0)).toBe(everyOpened)
    const open = (await scrapeMetrics(gateway().url)).filter(
      (sample) => sample.name === 'livegate_incidents_open' && sample.value > 0 && sample.labels.rule !== 'stale-list',
    )
    expect(open.map((sample) => sample.labels)).toEqual([{ rule: 'forgetful', severity: 'WARNING' }])
  })

  it(
    'an open incident survives a restart as the same ' + 'incident; a rule removed resolves it at the next start',
    async () => {
      const [before] = await incidents({ rule: 'forgetful' })
      for (const running of gateways.splice(0)) await running.close()
      gateways = [await startTestGateway(config(), db)]
      await evaluated()
      expect(await incidents({ rule: 'forgetful' })).toEqual([before])
      await gateway().close()
      gateways = [await startTestGateway(config(RULES.filter((rule) => rule.name !== 'forgetful')), db)]
      const [after] = await incidents({ rule: 'forgetful' })
      expect(after).toMatchObject({ id: before?.id, state: 'RESOLVED', acknowledgedBy: 'operator' })
    },
  )

  it('a bad rule stops the start with one line naming its key', async () => {
    const file = join(scratch(), 'bad.json')
    writeFileSync(file, JSON.stringify({ alerts: { rules: [{ name: 'a', when: 'task.health', is: ['SLEEPY'] }] } }))
    const run = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [...LIVEGATE_COMMAND, 'serve', '--config', file],
        { cwd: ROOT, env: { ...process.env, PORT: '0', LIVEGATE_DATA_DIR: MEMORY_DATA_DIR } },
        (error, _stdout, stderr) =>
          resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stderr }),
      )
    })
    expect(run.code).toBe(1)
    expect(run.stderr.split('\n').filter((line) => line.trim() !== '')).toEqual([
      `livegate: config file ${file}: alerts.rules[0].is[0]: Invalid option: expected one of ` +
        `"STARVING"|"RECONNECTING"|"UNKNOWN"`,
    ])
  })
})
