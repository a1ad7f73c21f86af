import { createServer, type Server } from 'node:http'
import { mkdtempSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { databaseEnv, describeOnServer, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { SECRET } from '../support/gateway.fixture.js'
import { postCallbackOnce, type ServeProcess, startServeProcess } from '../support/livegate.process.js'

// Issue 41, defect 5: the topology users run (`serve` with its workers, and two instances of a
// rolling deploy) against a cloud of the test's own whose tasks stay at 1 viewer: one condition
// keeps one incident, whichever worker or instance looks, and through a restart.

/** A cloud whose task list lists each of its tasks with 1 viewer and a growing input, every answer. */
class Cloud {
  readonly tasks = new Set<string>()
  private bytes = 1000
  private server: Server | undefined

  async start(): Promise<string> {
    this.server = createServer((_request, response) => {
      this.bytes += 200_000
      const task_list = [...this.tasks].map((id) => ({
        id,
        vs_id: 'xvs-1',
        input_bytes: this.bytes,
        inputs: [{ user_name: 'carol', device_type: 2, url: '' }],
        outputs: [
          {
            tag: 'hd',
            format: 'flv',
            http_connections_num: 1,
            http_output_bytes: 1000,
            live_url: `http://xvs-1/${id}.flv`,
            streams: [],
          },
        ],
      }))
      response.setHeader('content-type', 'application/json')
      response.end(JSON.stringify({ ret: 0, task_list, user_list: [] }))
    })
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve))
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }

  async stop(): Promise<void> {
    await new Promise((resolve) => this.server?.close(resolve))
  }
}

const THIN = { name: 'thin', when: 'task.viewers', below: 5, for: '1s' }
const THINNER = { name: 'thinner', when: 'task.viewers', below: 3, for: '1s', serviceCodes: ['TESTING'] }

type IncidentRow = { id: number; rule: string; service_code: string; state: string; resolution: string | null }

describeOnServer('serve on a PostgreSQL server: one condition keeps one incident (issue 41, defect 5)', () => {
  let db: TestDatabase
  let sql: postgres.Sql
  const testing = new Cloud()
  const other = new Cloud()
  let urls: { testing: string; other: string }
  const running: ServeProcess[] = []

  /** `serve` with these rules; `--workers` only when given (the default is one per core). */
  const serve = async (rules: unknown[], workers?: number) => {
    const file = join(mkdtempSync(join(tmpdir(), 'livegate-incidents-')), 'livegate.json')
    writeFileSync(
      file,
      JSON.stringify({
        port: 0,
        services: [
          { serviceCode: 'TESTING', secrets: [SECRET], baseUrl: urls.testing },
          { serviceCode: 'OTHER', secrets: [SECRET], baseUrl: urls.other },
        ],
        upstream: { pollIntervalMs: 250, timeoutMs: 3000, retries: 0 },
        alerts: { rules },
      }),
    )
    const started = await startServeProcess(['--config', file, ...(workers ? ['--workers', String(workers)] : [])], {
      ...process.env,
      ...databaseEnv(db),
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
    })
    running.push(started)
    return started
  }
  const stop = async (serving: ServeProcess) => {
    const exited = new Promise((resolve) => serving.process.once('exit', resolve))
    serving.process.kill('SIGTERM')
    await exited
    running.splice(running.indexOf(serving), 1)
  }
  const post = async (url: string, fields: Record<string, string>) =>
    expect(await postCallbackOnce(url, fields, SECRET)).toBe(200)
  const incidents = async (rule: string) =>
    (await sql<IncidentRow[]>`select id, rule, service_code, state, resolution from incidents
      where rule = ${rule} order by id`) as IncidentRow[]
  const samples = async () => (await sql`select count(*)::int as n from task_samples`)[0]?.n as number
  /** Waits until the cloud has been sampled `n` more times for every task: passes enough to flap, on any machine. */
  const sampledMore = async (n: number) => {
    const from = await samples()
    await expect.poll(samples, { timeout: 120_000, interval: 250 }).toBeGreaterThanOrEqual(from + n)
  }

  beforeAll(async () => {
    db = await openTestDatabase()
    sql = postgres((db.directUrl ?? db.url) as string, { max: 1, onnotice: () => {} })
    urls = { testing: await testing.start(), other: await other.start() }
  }, 120_000)

  afterAll(async () => {
    for (const serving of running) serving.process.kill('SIGKILL')
    await sql?.end()
    await db?.drop()
    await testing.stop()
    await other.stop()
  })

  it('serve with its default workers keeps one incident per task at 1 viewer, through a restart; a code ' +
    'the rule no longer covers after it resolves', async () => {
    const first = await serve([THIN])
    await post(first.url, sampleCallbacks('t-1', 'TESTING').liveStart as Record<string, string>)
    await post(first.url, sampleCallbacks('o-1', 'OTHER').liveStart as Record<string, string>)
    testing.tasks.add('t-1')
    other.tasks.add('o-1')
    const open = async () => (await incidents('thin')).map((row) => `${row.service_code} ${row.state}`).sort()
    await expect.poll(open, { timeout: 120_000, interval: 250 }).toEqual(['OTHER OPEN', 'TESTING OPEN'])
    // Two tasks, sampled 4 times a second: 40 samples are passes enough for every worker to look many times.
    await sampledMore(40)
    const kept = await incidents('thin')
    expect(kept.map((row) => `${row.service_code} ${row.state} ${row.resolution}`).sort()).toEqual([
      'OTHER OPEN null',
      'TESTING OPEN null',
    ])
    await stop(first)
    // Restarted with the rule narrowed to TESTING: its incident goes on; OTHER's is no longer watched, so it resolves.
    const second = await serve([{ ...THIN, serviceCodes: ['TESTING'] }])
    await expect
      .poll(async () => (await incidents('thin')).find((row) => row.service_code === 'OTHER')?.state, {
        timeout: 120_000,
        interval: 250,
      })
      .toBe('RESOLVED')
    await sampledMore(40)
    const after = await incidents('thin')
    expect(after.map(({ id, service_code, state }) => ({ id, service_code, state }))).toEqual(
      kept.map(({ id, service_code }) => ({
        id,
        service_code,
        state: service_code === 'TESTING' ? 'OPEN' : 'RESOLVED',
      })),
    )
    expect(second.output()).not.toMatch(/"msg":"alerts: a pass failed/)
  }, 600_000)

  it('two instances whose rule sets differ (a rolling deploy adding a rule) keep its one incident open', async () => {
    // The instance of the test above is the older one; the newer one adds `thinner`.
    expect(running).toHaveLength(1)
    await serve([{ ...THIN, serviceCodes: ['TESTING'] }, THINNER], 1)
    await expect
      .poll(async () => (await incidents('thinner')).map((row) => row.state), { timeout: 120_000, interval: 250 })
      .toEqual(['OPEN'])
    await sampledMore(40)
    expect((await incidents('thinner')).map((row) => row.state)).toEqual(['OPEN'])
    expect((await incidents('thin')).filter((row) => row.state !== 'RESOLVED')).toHaveLength(1)
  }, 600_000)
})
