import { writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { asc, eq } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config/index.js'
import { toGlobalId } from '../../src/adapters/graphql/global.id.js'
import { type Gateway, startGateway } from '../../src/gateway.assembly.js'
import { listFilesBody } from '../../src/model/list-files.schema.js'
import { planArchive } from '../../src/simulator/archive.plan.js'
import { roundSeed } from '../../src/model/seeded.random.js'
import { generateScenario } from '../../src/simulator/session.scenario.js'
import { SIMULATOR_RETS } from '../../src/simulator/cloud.answers.js'
import { archiveStatus, recordings } from '../../src/storage/tables/recording.table.js'
import { CloudClient } from '../../src/work/cloud.client.js'
import { driverName, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { freePort } from '../support/free.port.js'
import { graphql } from '../support/graphql.client.js'
import { LIVEGATE_COMMAND, type ServeProcess, startListeningProcess } from '../support/livegate.process.js'
import { scratchDirs } from '../support/scratch.dir.js'
import { type Receiver, startReceiver, WEBHOOK_SECRET } from '../support/receiver.process.js'

const SECRET = 'abc'
const KEYS = { all: 'archive-all-1', alpha: 'archive-alpha-1' }
const bearer = (key: string) => ({ headers: { authorization: `Bearer ${key}` } })
const RECORDINGS = `query Recordings($filter: RecordingFilter, $first: Int) {
  recordings(filter: $filter, first: $first) {
    totalCount
    edges { node { id serviceCode fileName taskId userName playUrl views likes seenIn task { id taskId } } }
  }
}`
const CODES = ['ALPHA', 'BRAVO'] as const
const SEED = 17
const SESSIONS = 8
const RATE = 40
const scratch = scratchDirs('livegate-archive-')

// The simulator's first round, as the test can know it: task ids and each file's fate follow
// from the seed alone (archive.plan.ts), whatever time the process starts at.
const truth = planArchive(
  generateScenario({ seed: roundSeed(SEED, 0), sessions: SESSIONS, serviceCodes: CODES, rate: RATE, audience: true }),
  true,
)

describe(`the archive through list_files, with the simulator as a process, on ${driverName}`, {
  timeout: 120_000,
}, () => {
  let db: TestDatabase
  let gateway: Gateway
  let simulator: ServeProcess
  let simulatorUrl: string
  let hanging: Server
  let receiver: Receiver
  const held: Array<() => void> = []

  beforeAll(async () => {
    const dir = scratch()
    const simulatorPort = await freePort()
    simulatorUrl = `http://127.0.0.1:${simulatorPort}`
    // HANGING's cloud takes every request and never answers it.
    hanging = createServer((_request, response) => held.push(() => response.destroy()))
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve))
    const hangingUrl = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`
    db = await openTestDatabase()
    // ALPHA's recordings are told to a receiver that verifies every signature; BRAVO's are not.
    receiver = await startReceiver()
    gateway = await startGateway(
      loadConfig({
        env: {},
        value: {
          port: 0,
          log: { level: 'silent' },
          services: [
            ...CODES.map((serviceCode) => ({ serviceCode, secrets: [SECRET], baseUrl: simulatorUrl })),
            { serviceCode: 'HANGING', secrets: [SECRET], baseUrl: hangingUrl },
          ],
          apiKeys: [
            { name: 'all', key: KEYS.all, serviceCodes: ['*'] },
            { name: 'alpha', key: KEYS.alpha, serviceCodes: ['ALPHA'] },
          ],
          upstream: { pollIntervalMs: 300, timeoutMs: 20_000, retries: 0 },
          archive: { pollIntervalMs: 300, limit: 50 },
          webhooks: {
            endpoints: [
              {
                name: 'vod',
                url: `${receiver.url}/hooks/vod`,
                secret: WEBHOOK_SECRET,
                serviceCodes: ['ALPHA'],
                events: ['recording.*'],
              },
            ],
          },
        },
      }),
      { database: db.database },
    )
    const file = join(dir, 'simulator.json')
    writeFileSync(
      file,
      JSON.stringify({
        log: { level: 'silent' },
        services: CODES.map((serviceCode) => ({ serviceCode, secrets: [SECRET] })),
      }),
    )
    const args = ['--config', file, '--port', String(simulatorPort), '--gateway', gateway.url, '--seed', String(SEED)]
    simulator = await startListeningProcess(
      [
        ...LIVEGATE_COMMAND,
        'simulate',
        ...args,
        '--sessions',
        String(SESSIONS),
        '--rate',
        String(RATE),
        '--loop',
        '--archive-mishaps',
      ],
      { ...process.env, NODE_ENV: 'test' },
      /task_list at (http:\/\/[^\s]+)\/api\/20140928\/task_list/,
    )
  })

  afterAll(async () => {
    simulator?.process.kill('SIGTERM')
    for (const release of held) release()
    hanging?.closeAllConnections()
    await new Promise((resolve) => hanging?.close(resolve))
    await gateway?.close()
    await receiver?.stop()
    await db?.drop()
  })

  const catalogue = (serviceCode: string) =>
    db.database.db.select().from(recordings).where(eq(recordings.serviceCode, serviceCode)).orderBy(asc(recordings.id))

  it('the ground truth has every fate, so each case below is played', () => {
    expect(truth.files.some((file) => file.fate === 'SILENT')).toBe(true)
    expect(truth.files.some((file) => file.fate === 'ANNOUNCED')).toBe(true)
    expect(truth.lost.length).toBeGreaterThan(0)
  })

  it('asks list_files signed as the cloud checks it: a wrong secret is refused, the gateway is answered', async () => {
    const wrong = new CloudClient({
      services: [{ serviceCode: 'ALPHA', secrets: ['not-the-secret'], verify: 'enforce', baseUrl: simulatorUrl }],
    })
    const refused = await wrong.send({
      serviceCode: 'ALPHA',
      operation: 'management',
      body: listFilesBody(5),
      timeoutMs: 5000,
    })
    expect(refused.ret).toBe(SIMULATOR_RETS.BAD_SIGNATURE)
    // The gateway may have asked before the simulator listened (NETWORK); never a refused signature.
    await expect
      .poll(
        async () =>
          (await db.database.db.select().from(archiveStatus).where(eq(archiveStatus.serviceCode, 'ALPHA')))[0],
        { timeout: 30_000 },
      )
      .toMatchObject({ consecutiveFailures: 0, lastSuccessAt: expect.any(Date) })
    const [status] = await db.database.db.select().from(archiveStatus).where(eq(archiveStatus.serviceCode, 'ALPHA'))
    expect(status?.lastErrorKind).not.toBe('RET')
  })

  it('every archived file is one recording, seen where the cloud told it; a lost archive is none', async () => {
    for (const code of CODES) {
      const expected = truth.files.filter((file) => file.serviceCode === code)
      await expect
        .poll(
          async () => {
            const rows = await catalogue(code)
            return expected.every((file) =>
              rows.some(
                (row) => row.fileName === file.fileName && row.fromList && (file.fate === 'SILENT' || row.fromCallback),
              ),
            )
          },
          { timeout: 60_000 },
        )
        .toBe(true)
      const rows = await catalogue(code)
      for (const file of expected) {
        const mine = rows.filter((row) => row.fileName === file.fileName)
        // One row per file: told both ways, it is still one recording.
        expect(mine, file.fileName).toHaveLength(1)
        const [row] = mine
        expect(row, file.fileName).toMatchObject({
          taskId: file.taskId,
          userName: file.userName,
          fromList: true,
          fromCallback: file.fate === 'ANNOUNCED',
        })
        expect(row?.views).toEqual(expect.any(Number))
      }
      for (const lost of truth.lost.filter((task) => task.serviceCode === code)) {
        expect(rows.some((row) => row.taskId === lost.taskId)).toBe(false)
      }
    }
  })

  it('answers the catalogue over GraphQL: a listed-only file with its task, one id both ways', async () => {
    const silent = truth.files.find((file) => file.fate === 'SILENT')
    const announced = truth.files.find((file) => file.fate === 'ANNOUNCED')
    for (const file of [silent, announced]) {
      if (!file) throw new Error('the truth has both fates (first test)')
      // The simulator loops: later rounds add newer files, so the task names the one asked for.
      const filter = {
        serviceCode: file.serviceCode,
        userName: file.userName,
        task: toGlobalId('Task', file.serviceCode, file.taskId),
      }
      const answer = await graphql(gateway, RECORDINGS, { filter }, bearer(KEYS.all))
      expect(answer.errors).toBeUndefined()
      const nodes = answer.data?.recordings.edges.map((edge: { node: unknown }) => edge.node) as Array<
        Record<string, any>
      >
      const node = nodes.find((n) => n.fileName === file.fileName)
      expect(node, file.fileName).toMatchObject({
        taskId: file.taskId,
        playUrl: expect.stringMatching(`/${file.fileName}$`),
        seenIn: file.fate === 'SILENT' ? ['FILE_LIST'] : ['CALLBACK', 'FILE_LIST'],
      })
      expect(node?.task?.taskId).toBe(file.taskId)
      expect(answer.data?.recordings.totalCount).toBe(1)
      const again = await graphql(
        gateway,
        `query Node($id: ID!) { node(id: $id) { id ... on Recording { fileName } } }`,
        { id: node?.id },
        bearer(KEYS.all),
      )
      expect(again.data?.node).toEqual({ id: node?.id, fileName: file.fileName })
    }
    const onlyListed = await graphql(
      gateway,
      RECORDINGS,
      { filter: { seenIn: ['FILE_LIST'] }, first: 100 },
      bearer(KEYS.all),
    )
    const neverAnnounced = await graphql(
      gateway,
      RECORDINGS,
      { filter: { seenIn: ['CALLBACK'] }, first: 100 },
      bearer(KEYS.all),
    )
    expect(onlyListed.data?.recordings.totalCount).toBeGreaterThan(neverAnnounced.data?.recordings.totalCount)
  })

  it('a task, its output and its user answer the very recordings the catalogue does, with the same ids', async () => {
    const LINKED = `query Linked($id: ID!) { task(id: $id) {
      recordings { id fileName seenIn views }
      outputs { recordings { id fileName } }
      user { recordings(first: 100) { totalCount edges { node { id fileName } } } } } }`
    for (const fate of ['SILENT', 'ANNOUNCED'] as const) {
      const file = truth.files.find((candidate) => candidate.fate === fate)
      if (!file) throw new Error(`the truth has a ${fate} file (first test)`)
      const id = toGlobalId('Recording', file.serviceCode, file.fileName)
      const answer = await graphql(
        gateway,
        LINKED,
        { id: toGlobalId('Task', file.serviceCode, file.taskId) },
        bearer(KEYS.all),
      )
      expect(answer.errors).toBeUndefined()
      const task = answer.data?.task
      const mine = task.recordings.filter((recording: { id: string }) => recording.id === id)
      expect(mine, file.fileName).toEqual([
        { id, fileName: file.fileName, seenIn: expect.any(Array), views: expect.any(Number) },
      ])
      expect(mine[0].seenIn).toEqual(fate === 'SILENT' ? ['FILE_LIST'] : ['CALLBACK', 'FILE_LIST'])
      // Only a type 2 names the output a file was recorded from.
      const fromOutputs = task.outputs.flatMap((output: { recordings: Array<{ id: string }> }) =>
        output.recordings.map((r) => r.id),
      )
      expect(fromOutputs.filter((other: string) => other === id)).toHaveLength(fate === 'SILENT' ? 0 : 1)
      const ofUser = task.user.recordings.edges.map((edge: { node: { id: string } }) => edge.node.id)
      expect(ofUser).toContain(id)
    }
  })

  it("keeps each tenant to its codes: another code's recordings, ids and filters read as none", async () => {
    const mine = await graphql(gateway, RECORDINGS, { first: 100 }, bearer(KEYS.alpha))
    const codes = new Set(
      mine.data?.recordings.edges.map((edge: { node: { serviceCode: string } }) => edge.node.serviceCode),
    )
    expect([...codes]).toEqual(['ALPHA'])
    const bravoFile = truth.files.find((file) => file.serviceCode === 'BRAVO')
    if (!bravoFile) throw new Error('BRAVO has a file in the truth')
    const theirs = await graphql(gateway, RECORDINGS, { filter: { serviceCode: 'BRAVO' } }, bearer(KEYS.alpha))
    expect(theirs.data?.recordings).toMatchObject({ totalCount: 0, edges: [] })
    const all = await graphql(gateway, RECORDINGS, { filter: { serviceCode: 'BRAVO' }, first: 100 }, bearer(KEYS.all))
    const bravoId = all.data?.recordings.edges.find(
      (edge: { node: { fileName: string } }) => edge.node.fileName === bravoFile.fileName,
    )?.node.id
    expect(bravoId).toEqual(expect.any(String))
    const node = await graphql(
      gateway,
      'query Node($id: ID!) { node(id: $id) { id } }',
      { id: bravoId },
      bearer(KEYS.alpha),
    )
    expect(node.errors).toBeUndefined()
    expect(node.data?.node).toBeNull()
  })

  it('tells recording.ready once per recording, from either channel, to the endpoints of its code only', async () => {
    const alpha = truth.files.filter((file) => file.serviceCode === 'ALPHA')
    const readyOf = async () =>
      (await receiver.received('/hooks/vod')).filter((receipt) => receipt.body.type === 'recording.ready')
    await expect
      .poll(
        async () => {
          const names = new Set(
            (await readyOf()).map((receipt) => (receipt.body.data.recording as { fileName: string }).fileName),
          )
          return alpha.every((file) => names.has(file.fileName))
        },
        { timeout: 60_000 },
      )
      .toBe(true)
    const receipts = await readyOf()
    expect(receipts.every((receipt) => receipt.verified && receipt.body.data.serviceCode === 'ALPHA')).toBe(true)
    for (const file of alpha) {
      const mine = receipts.filter(
        (receipt) => (receipt.body.data.recording as { fileName: string }).fileName === file.fileName,
      )
      // Delivered once: the event was written once, however many answers and callbacks named the file.
      expect(new Set(mine.map((receipt) => receipt.id)).size, file.fileName).toBe(1)
      expect(mine[0]?.body.data.recording).toMatchObject({ id: toGlobalId('Recording', 'ALPHA', file.fileName) })
    }
  })

  it("shows the archive's freshness beside the task list's, and the files no type 2 announced", async () => {
    const FRESHNESS = `query Fresh($code: String!) { upstream(serviceCode: $code) {
      healthy archive { configured healthy stale consecutiveFailures lastSuccessAt fileCount } callbacks {
        missingArchived } } }`
    const silent = truth.files.filter((file) => file.serviceCode === 'ALPHA' && file.fate === 'SILENT').length
    expect(silent).toBeGreaterThan(0)
    await expect
      .poll(
        async () =>
          (await graphql(gateway, FRESHNESS, { code: 'ALPHA' }, bearer(KEYS.all))).data?.upstream.callbacks
            .missingArchived,
        {
          timeout: 60_000,
        },
      )
      .toBeGreaterThanOrEqual(silent)
    const alpha = (await graphql(gateway, FRESHNESS, { code: 'ALPHA' }, bearer(KEYS.all))).data?.upstream
    expect(alpha.archive).toMatchObject({
      configured: true,
      healthy: true,
      stale: false,
      consecutiveFailures: 0,
      lastSuccessAt: expect.any(String),
    })
    expect(alpha.archive.fileCount).toBeGreaterThan(0)
    // Asked, never answered: not healthy, and stale from the start.
    const hangingAnswer = await graphql(gateway, FRESHNESS, { code: 'HANGING' }, bearer(KEYS.all))
    expect(hangingAnswer.data?.upstream.archive).toMatchObject({
      configured: true,
      healthy: false,
      stale: true,
      fileCount: null,
    })
    // Another tenant's code reads as one livegate knows nothing of.
    const theirs = await graphql(gateway, FRESHNESS, { code: 'BRAVO' }, bearer(KEYS.alpha))
    expect(theirs.data?.upstream).toMatchObject({
      archive: { lastSuccessAt: null, fileCount: null },
      callbacks: { missingArchived: 0 },
    })
  })

  it('a list that hangs slows no query', async () => {
    // HANGING's requests are held open; reads answer from what is stored meanwhile.
    await expect.poll(() => held.length, { timeout: 30_000 }).toBeGreaterThan(0)
    const answer = await graphql(
      gateway,
      '{ tasks(first: 5) { totalCount } recordings(first: 5) { totalCount } }',
      {},
      bearer(KEYS.all),
    )
    expect(answer.errors).toBeUndefined()
    expect(answer.data?.tasks.totalCount).toBeGreaterThan(0)
  })
})
