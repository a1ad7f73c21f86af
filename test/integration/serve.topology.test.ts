import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { afterAll, afterEach, expect, it } from 'vitest'
import { emptyTaskState } from '../../src/fold/task.fold.js'
import { signCallback } from '../../src/model/callback.sign.js'
import { startTaskListServer, type TaskListServer } from '../../src/simulator/task-list.server.js'
import { EMPTY_TASK_LIST } from '../../src/simulator/task-list.snapshot.js'
import { writeChanges } from '../../src/storage/graph/graph.statements.js'
import { sampleCallbacks } from '../fixtures/callback.samples.js'
import { describeOnServer, openTestDatabase, type TestDatabase } from '../support/database.fixture.js'
import { freePort } from '../support/free.port.js'
import { SECRET } from '../support/gateway.fixture.js'
import { sendOnce } from '../support/http.once.js'
import { type ServeProcess, startServeProcess } from '../support/livegate.process.js'
import { parseMetrics } from '../support/metrics.scrape.js'
import { type PrivateCluster, startPrivateCluster } from '../support/postgres.cluster.js'
import { type Receiver, startReceiver, WEBHOOK_SECRET } from '../support/receiver.process.js'

// Issue 41's defects of `serve` with its default workers on a PostgreSQL server (4, 7 and 8),
// each reproduced on the topology where it was seen: several processes share only the server.

/** Posts one signed callback of `taskId` with `seq`; true when it was answered 200 (acknowledged). */
async function post(url: string, taskId: string, seq: number): Promise<boolean> {
  const fields = { ...(sampleCallbacks(taskId).liveResume as Record<string, string>), seq: String(seq) }
  const signed = signCallback(fields, {
    url: `${url}/callbacks`,
    method: 'POST',
    secret: SECRET,
    headerPrefix: 'svc',
    nowMs: Date.now(),
  })
  return (await sendOnce(signed.url, 'POST', signed.headers, signed.body)).status === 200
}

/** Writes a config file in a directory of its own (which `value` may name) and answers its path. */
function configFile(value: (dir: string) => Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'livegate-topology-'))
  const file = join(dir, 'livegate.json')
  writeFileSync(file, JSON.stringify(value(dir)))
  return file
}

const serveEnv = (url: string) => ({ ...process.env, DATABASE_URL: url, LOG_LEVEL: 'info', LOG_FORMAT: 'json' })

/**
 * Starts `serve` on a port chosen here and posts callbacks of `taskId` from the moment its first
 * worker answers, while the others still start, until `serve` says it listens and `after` more
 * were acknowledged. Answers the process and the seqs acknowledged, before and after that line.
 */
async function startWhilePosting(
  args: string[],
  env: NodeJS.ProcessEnv,
  port: number,
  taskId: string,
  onFirstAnswer: () => Promise<void> = async () => {},
  after = 5,
) {
  const url = `http://127.0.0.1:${port}`
  const early: number[] = []
  const late: number[] = []
  let announced = false
  let failed = false
  const serve = startServeProcess(args, env).finally(() => {
    announced = true
  })
  serve.catch(() => {
    failed = true
  })
  let seq = 0
  let told = false
  // Bounded: a start that never ends fails the test through `serve` instead.
  for (let sent = 0; sent < 100_000 && !failed && (!announced || late.length < after); sent++) {
    const current = seq++
    const wasAnnounced = announced
    if (await post(url, taskId, current)) {
      ;(wasAnnounced ? late : early).push(current)
      if (!told) {
        told = true
        await onFirstAnswer()
      }
    } else await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return { serve: await serve, early, late }
}

const twoReady = async (serve: ServeProcess, limitMs = 240_000) => {
  // A worker's start (tsx compiling, on a busy machine) takes a while: a limit against hanging, not a measure.
  for (const limit = Date.now() + limitMs; ; await new Promise((resolve) => setTimeout(resolve, 500))) {
    const text = (await sendOnce(`${serve.url}/readyz`, 'GET', {})).text
    const report = JSON.parse(text || '{}') as { ready?: boolean; workers?: Array<{ ready: boolean }> }
    if (report.ready && report.workers?.length === 2) return
    if (Date.now() > limit) throw new Error(`two workers were not ready within ${limitMs / 1000} s: ${serve.output()}`)
  }
}

describeOnServer('issue 41.4: serve --workers 2 with an endpoint tells the first callbacks of a new deployment', () => {
  let db: TestDatabase
  let receiver: Receiver
  let serve: ServeProcess | undefined

  afterAll(async () => {
    serve?.process.kill('SIGKILL')
    await receiver?.stop()
    await db?.drop()
  })

  it('every callback acknowledged while the webhook worker still started is delivered, and a restart replays ' +
    'nothing', async () => {
    db = await openTestDatabase()
    receiver = await startReceiver()
    const port = await freePort()
    const file = configFile(() => ({
      port,
      services: [{ serviceCode: 'TESTING', secrets: [SECRET] }],
      webhooks: {
        endpoints: [
          {
            name: 'a',
            url: `${receiver.url}/hooks/a`,
            secret: WEBHOOK_SECRET,
            serviceCodes: '*',
            events: ['callback.*'],
          },
        ],
      },
    }))
    const args = ['--config', file, '--workers', '2']
    const taskId = `first-${Date.now()}`
    const started = await startWhilePosting(args, serveEnv(db.url as string), port, taskId)
    serve = started.serve
    // The window the defect lived in: callbacks acknowledged before every worker had started.
    expect(started.early.length).toBeGreaterThan(0)
    const acknowledged = [...started.early, ...started.late].map(String)
    const delivered = async () =>
      new Set(
        (await receiver.received('/hooks/a'))
          .filter((r) => r.verified && r.body.data.taskId === taskId)
          .map((r) => String((r.body.data.fields as Record<string, string>).seq)),
      )
    await expect
      .poll(
        async () => {
          const have = await delivered()
          return acknowledged.filter((seq) => !have.has(seq))
        },
        { timeout: 120_000, interval: 500 },
      )
      .toEqual([])

    // A restart of the whole deployment sets no checkpoint anew: nothing old is told again.
    const exited = new Promise((resolve) => serve?.process.once('exit', resolve))
    serve.process.kill('SIGTERM')
    await exited
    const before = (await receiver.received('/hooks/a')).length
    const restarted = await startWhilePosting(args, serveEnv(db.url as string), port, `${taskId}-again`)
    serve = restarted.serve
    const again = [...restarted.early, ...restarted.late].map(String)
    const afterRestart = async () => (await receiver.received('/hooks/a')).slice(before)
    await expect
      .poll(async () => (await afterRestart()).filter((r) => r.body.data.taskId === `${taskId}-again`).length, {
        timeout: 120_000,
        interval: 500,
      })
      .toBeGreaterThanOrEqual(again.length)
    expect((await afterRestart()).filter((r) => r.body.data.taskId === taskId)).toEqual([])
  }, 600_000)
})

describeOnServer('issue 41.7: serve --workers 2: concurrent idempotent retries spend no rate slot', () => {
  const KEY = 'topology-operate'
  const STOP = `mutation Stop($id: ID!, $key: String) { stopTask(id: $id, idempotencyKey: $key) { action { id } } }`
  let db: TestDatabase
  let cloud: TaskListServer
  let serve: ServeProcess | undefined

  afterAll(async () => {
    serve?.process.kill('SIGKILL')
    await cloud?.close()
    await db?.drop()
  })

  it('20 concurrent stopTask under one key, on connections of their own (so to both workers), are answered the ' +
    'one action, never RATE_LIMITED', async () => {
    db = await openTestDatabase()
    cloud = await startTaskListServer({
      services: [{ serviceCode: 'A', secret: SECRET }],
      source: () => EMPTY_TASK_LIST,
    })
    const tasks = Array.from({ length: 3 }, (_, i) => emptyTaskState('A', `t-${i}`))
    await writeChanges(db.database.db, { tasks, users: [] }, new Date())
    const file = configFile(() => ({
      port: 0,
      services: [{ serviceCode: 'A', secrets: [SECRET], baseUrl: cloud.url }],
      apiKeys: [{ name: 'operate', key: KEY, serviceCodes: ['A'], can: ['operate'] }],
      upstream: { pollIntervalMs: 0 },
      // Each worker's window holds two actions: every retry that spent one would be seen.
      limits: { actionsPerMinute: 2 },
    }))
    serve = await startServeProcess(['--config', file, '--workers', '2'], serveEnv(db.url as string))
    await twoReady(serve)
    const id = (task: string) => Buffer.from(`Task:${JSON.stringify(['A', task])}`).toString('base64url')
    const stop = async (task: string, key: string) => {
      const answer = await sendOnce(
        `${serve?.url}/graphql`,
        'POST',
        { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
        JSON.stringify({ query: STOP, variables: { id: id(task), key } }),
      )
      return JSON.parse(answer.text || '{}') as {
        data?: { stopTask?: { action: { id: string } } }
        errors?: Array<{ extensions?: { code?: string } }>
      }
    }
    for (const [round, task] of ['t-0', 't-1'].entries()) {
      const answers = await Promise.all(Array.from({ length: 20 }, () => stop(task, `press-once-${round}`)))
      expect(answers.flatMap((answer) => answer.errors?.map((error) => error.extensions?.code) ?? [])).toEqual([])
      expect(new Set(answers.map((answer) => answer.data?.stopTask?.action.id)).size).toBe(1)
    }
    expect(cloud.actions.filter((action) => action.operation === 'cancel_task')).toHaveLength(2)
  }, 600_000)
})

// A cluster of its own, stopped and started: the server every test shares is never stopped.
describeOnServer('issue 41.8: serve --workers 2 through a database outage while its second worker starts', () => {
  let cluster: PrivateCluster
  let serve: ServeProcess | undefined
  let sql: postgres.Sql | undefined

  afterEach(async () => {
    serve?.process.kill('SIGKILL')
    await sql?.end()
    await cluster?.destroy()
  })

  it('the serving worker goes on, the one that failed is replaced, and every acknowledged callback is stored', async () => {
    cluster = await startPrivateCluster()
    const port = await freePort()
    const file = configFile((dir) => ({
      port,
      services: [{ serviceCode: 'TESTING', secrets: [SECRET] }],
      spool: { dir: join(dir, 'spool') },
    }))
    const taskId = `outage-${Date.now()}`
    let exitCode: number | null | undefined
    // PostgreSQL goes away from the moment the first worker answers, while the second one starts,
    // for 6 s and until the second worker's start has failed (or the whole `serve` is gone).
    const outage = async () => {
      await cluster.stop()
      const from = Date.now()
      const restarted = async () => {
        const answer = await sendOnce(`http://127.0.0.1:${port}/metrics`, 'GET', {})
        if (answer.status === 0) return true
        return parseMetrics(answer.text).some((s) => s.name === 'livegate_worker_restarts_total' && s.value > 0)
      }
      for (const limit = from + 120_000; Date.now() < limit; await new Promise((resolve) => setTimeout(resolve, 250)))
        if (Date.now() - from >= 6000 && (await restarted())) break
      await cluster.start()
    }
    let outageDone: Promise<void> = Promise.resolve()
    const started = await startWhilePosting(
      ['--config', file, '--workers', '2'],
      serveEnv(cluster.url),
      port,
      taskId,
      async () => {
        outageDone = outage()
      },
      20,
    )
    serve = started.serve
    serve.process.once('exit', (code) => {
      exitCode = code
    })
    await outageDone
    await twoReady(serve)
    expect(exitCode).toBeUndefined()
    const acknowledged = [...started.early, ...started.late].map(String)
    const reader = postgres(cluster.url, { max: 1, onnotice: () => {} })
    sql = reader
    const stored = async () =>
      new Set(
        (
          await reader`select substring(convert_from(body, 'UTF8') from 'seq[^0-9]+([0-9]+)') as seq
            from callbacks where task_id = ${taskId}`
        ).map((row) => row.seq as string),
      )
    const missing = async () => {
      const have = await stored()
      return acknowledged.filter((seq) => !have.has(seq))
    }
    await expect.poll(missing, { timeout: 120_000, interval: 500 }).toEqual([])
    const metrics = parseMetrics((await sendOnce(`${serve.url}/metrics`, 'GET', {})).text)
    const restarts = metrics
      .filter((sample) => sample.name === 'livegate_worker_restarts_total')
      .reduce((n, sample) => n + sample.value, 0)
    expect(restarts).toBeGreaterThanOrEqual(1)
  }, 600_000)
})
